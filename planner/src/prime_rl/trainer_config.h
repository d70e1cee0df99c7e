// The chosen plan as a prime-rl config fragment (`muonplan plan --emit prime-rl`), in prime-rl's
// current schema (docs/trainer-config.md): [model] name, seq_len and the batch keys,
// [deployment], [trainer.model] and [trainer.optim] (RL), or [model], [data], [deployment],
// [optim] (SFT). What prime-rl has no key for (bf16 momentum, NS coefficients, update RMS,
// owners, Muon under full offload, limits) is written as `# muonplan: key = value` comments,
// which prime-rl skips and `--trainer-config` reads, so the fragment plans the same again.
// Key names come from the key table (trainer_keys.h).
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace muonplan {

struct EmitInput {
  bool sft = false;
  std::string model_id;                        // [model] name: the id the input named
  std::string batch_key = "token_batch_size";  // RL: token_batch_size or batch_size
  // ac_offloading's max_inflight_activations when the writer writes the table: the config's;
  // 0 not set (an empty table: prime-rl's default, as the planner takes the topology's)
  int64_t ac_max_inflight = 0;
  // One node as [deployment] type = "single_node" with num_train_gpus (SFT, or an RL input
  // that was single-node); else num_train_nodes = 1: an RL single node shares its GPUs with
  // inference (num_infer_gpus, default 1).
  bool single_node = false;
  // A standalone trainer file (`trainer @ FILE`): [model], [optim], [data] fake; no world keys.
  bool standalone = false;
  // --prime-rl-version: key names are those of that date (prime_rl_key_on); "" the newest.
  std::string prime_rl_version;
  // Without a trainer config: only the keys the plan chooses (world, layout, offload, optimizer
  // type, batch) and those whose flag the user gave (`given`, dashed flag names) are written,
  // never muonplan's defaults for the rest (lr, weight decay, AC, LM head): prime-rl's apply.
  bool only_given = false;
  std::set<std::string> given;
  // The file gives dp_replicate as nodes / nodes_per_fsdp_group: that key is written instead.
  bool fsdp_group_key = false;
  // The input's [model.vlm]: prime-rl's CP rules for a VLM apply to the emit check.
  bool vlm = false;
  // --allocator as planned (default | expandable; "" the topology's, not a prime-rl setting):
  // written as [trainer.env_vars] PYTORCH_CUDA_ALLOC_CONF where the era has that table.
  std::string allocator;
};

// `plan` is plan_to_json's output. Throws nlohmann::json::exception when a key is missing.
std::string prime_rl_config(const nlohmann::json& plan, const EmitInput& in);

// A line of the fragment's opening comments (not a `# muonplan: key = value` line, which is
// a setting; a standalone trainer file's world comes first).
bool is_header_comment(const std::string& line);

// trainer_config_patch.cc. `chosen` and `written` are prime_rl_config's fragments of the plan
// and of the file's own plan; a key changes where they differ.
// The dotted paths of the changed keys ("trainer.model.cp", "#muonplan.bf16_momentum").
// `force`: paths written even where both fragments agree (ep = auto on a changed world).
std::vector<std::string> changed_lines(const std::string& chosen, const std::string& written,
                                       const std::vector<std::string>& force = {});
// `chosen` with only the changed keys (--emit prime-rl-diff).
std::string diff_fragment(const std::string& chosen, const std::string& written,
                          const std::vector<std::string>& force = {});
// The user's file (`source`, read from `path`) with the changed keys written into its text at
// the positions toml++ reports (the value's bytes replaced, a new key after the last key line
// of its table), every other byte kept, a BOM included (--emit prime-rl over --trainer-config).
std::string patched_file(const std::string& source, const std::string& path,
                         const std::string& chosen, const std::string& written,
                         const std::vector<std::string>& force = {});

}  // namespace muonplan
