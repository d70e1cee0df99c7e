// `muonplan plan --trainer-config FILE`: a prime-rl trainer config (RL or SFT, current and older
// key names; docs/trainer-config.md) read as prime-rl reads it, defaults applied, into plan
// flags. `# muonplan: key = value` comments carry what prime-rl has no key for, so a file
// `--emit prime-rl` writes plans the same again.
#pragma once

#include <string>
#include <vector>

#include "muonplan/base/error.h"
#include "muonplan/planner/model_spec.h"
#include "muonplan/planner/plan_request.h"

namespace muonplan {

// One plan flag the file sets, and where (for "--FLAG overrides FILE:LINE (key = value)").
struct FileValue {
  std::string flag, text;
  SourceLoc at;
  std::string shown;  // "table.key = value" as read, or "(default)" for prime-rl's default
};

// Unknown keys of planning tables listed one warning each; the rest are summed in one line.
constexpr int64_t kMaxListedUnknownKeys = 20;

struct TrainerConfig {
  std::string path;
  // The schema (trainer_config_in.cc, schema_of): an RL file (rl launcher), an SFT file, or a
  // standalone trainer file (`trainer @ FILE`: the RL trainer's own, its world set by torchrun).
  bool sft = false, standalone = false;
  std::string model_name;  // the id or path the file names (prime-rl's default if silent)
  SourceLoc model_at;
  int nodes = 1, gpus_per_node = 8;        // as the file states them
  bool single_node = true;                 // [deployment] type (num_train_gpus, one node)
  int node_gpus = 8, infer_gpus = 0;       // single node: the node's GPUs and inference's share
  std::string world_table = "deployment";  // where the nodes are: "" (rl_slurm era), "slurm"
  bool fsdp_group_key = false;             // dp_replicate came from nodes_per_fsdp_group
  int dp_replicate = 1, cp = 1;
  int ep = 0;        // 0: "auto", resolved against the model (resolved_ep)
  bool vlm = false;  // [model.vlm]: prime-rl takes CP for it only with cp_style = "ulysses"
  SourceLoc layout_at;
  std::vector<FileValue> values;  // every flag but --layout
  // The RL trainer's [weight_broadcast] type when it is one the plan times other than the
  // filesystem's ("nccl"); "" the filesystem (prime-rl's default). No flag: PlanFlags carries it.
  std::string weight_broadcast;
  std::string batch_key;  // token_batch_size or batch_size: what --emit writes back
  // RL: the step's tokens as the file gives them and its row length; apply_trainer_config
  // rounds them up to whole rows for the world the flags name (prime_rl_batch.cc).
  int64_t rl_tokens = 0, seq_len = 0;
  std::vector<std::string> ignored;   // tables that do not change the plan
  std::vector<std::string> warnings;  // "FILE:LINE:COL: key: ..." (unknown keys, approximations)
  int64_t unknown_keys = 0;           // in planning tables; past kMaxListedUnknownKeys, counted
  std::vector<std::string> notes;     // defaults applied, derived values, upper bounds

  // "rl", "sft" or "trainer"; [model] and [optim] sit at the top of SFT and trainer files.
  const char* kind() const { return sft ? "sft" : standalone ? "trainer" : "rl"; }
  bool top_level() const { return sft || standalone; }
  // ep = "auto": prime_rl_auto_ep (prime_rl_rules.h) over the FSDP island world / dp_replicate.
  int resolved_ep(const ModelSpec& spec, int world) const;
  const FileValue* value(const std::string& flag) const;
};

// InputError "FILE:LINE:COL: key: ..." for bad TOML, a wrong type or a contradiction.
// `version`: --prime-rl-version, a date YYYY-MM-DD whose prime-rl defaults apply where the
// file is silent; empty: the newest the table knows (prime_rl_versions.cc).
TrainerConfig read_trainer_config(const std::string& path, const std::string& version = "");

// InputError "--prime-rl-version: ..." unless `version` is a date of the calendar YYYY-MM-DD
// (2026-02-30 and 0000-01-01 are not); the flag path checks it as the file path does.
void check_prime_rl_version(const std::string& version);

// Sets `flags` from the file. A flag already given (not at PlanFlags{}'s value) wins; each
// such override is appended to `overrides` as a line to print. Clears flags.trainer_config.
void apply_trainer_config(const TrainerConfig& tc, const ModelSpec& spec, PlanFlags& flags,
                          std::vector<std::string>& overrides);

// Reports an InputError to_plan_request raised for a flag the file set at the file's line.
// (`overrides` lists the flags given instead: their errors stay theirs).
[[noreturn]] void rethrow_at_file(const TrainerConfig& tc, const InputError& e,
                                  const std::vector<std::string>& overrides);

}  // namespace muonplan
