// Plan options as a user states them (command-line flags, Python keyword arguments), and their
// one translation into a PlanRequest, so every front end validates them alike and fails with
// the same one-line messages (InputError naming the flag, e.g. "--nodes: ...").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "muonplan/planner/plan.h"

namespace muonplan {

// Field by field the `muonplan plan` flags (docs/cli-contract.md); defaults are the CLI's.
struct PlanFlags {
  std::string nodes = "auto", layout, optimizer = "muon", offload = "auto";
  std::string staging = "whole", schedule = "quintic", owners = "balanced";
  std::string workload, ac = "full", cp_style = "ulysses";
  // Selective AC's targets, comma-separated (empty: prime-rl's default, norm); AC on every
  // ac_freq-th layer (prime-rl's [model.ac] targets and freq).
  std::string ac_targets;
  int64_t ac_freq = 1;
  std::string attention;  // fa2 | fa3 | sdpa | auto; empty: the workload file's, else auto
  // prime-rl's optimization_dtype and reduce_dtype (Workload::master_bytes, reduce_bytes).
  std::string optimization_dtype = "float32", reduce_dtype = "float32";
  // A prime-rl trainer config's path: prepare_plan (prime_rl.h) turns it into the flags below
  // before to_plan_request, which refuses one not applied; the plan request reads no TOML.
  std::string trainer_config;
  std::string prime_rl_version;  // the trainer config's prime-rl date (YYYY-MM-DD); empty: newest
  std::string trainer;           // rl | sft: the prime-rl trainer running the workload; empty: none
  std::string expert_load = "balanced";  // balanced | FILE of tokens per expert
  int64_t lm_head_chunk = 0;
  int64_t ac_max_inflight = 0;  // no flag: a trainer config's ac_offloading sets it; 0: not set
  // No flag: an RL trainer config's weight broadcast (Workload::weight_broadcast); "" filesystem.
  std::string weight_broadcast;
  bool inference_on_trainer_node = false;
  int gpus_per_node = 0, max_nodes = 0, max_predictions = 0;
  int64_t tokens_per_step = 0, seq_len = 0, micro_batch_seqs = 1;
  bool ac_offload = false, bf16_momentum = false, nesterov = false, pinned_state = false;
  bool include_mtp = false;
  // LoRA (lora.h): rank 0 is none; alpha 0 and empty targets are prime-rl's defaults;
  // adapters: the slots kept resident (prime-rl's max_concurrent_runs).
  int lora_rank = 0, lora_adapters = 1;
  int lora_active_runs = -1;  // runs with an AdamW (0..adapters); -1: every slot
  double lora_alpha = 0;
  std::string lora_targets;
  double gpu_memory_gib = 0, host_ram_gib = 0;
  std::string runtime;  // muonplan | pytorch; empty: pytorch with a workload, else muonplan
  // The runtime the plan is for (prime_rl.h runs_on): prime-rl | muonplan; empty: prime-rl with
  // a trainer config or --emit prime-rl, else muonplan. Not --runtime (whose memory model).
  std::string runs_on;
  std::string allocator;  // default | expandable; empty: the topology's pytorch: block
  double gpu_headroom = -1, host_headroom = -1;  // fractions kept free; negative: the runtime's
  OptimizerHyper hyper;
  // Each flag's text as given to set_plan_flag (dashed name -> text): messages quote a value
  // as typed ("--lr 0.0003"), not as a double prints (0.00029999999999999997).
  std::map<std::string, std::string> typed;
};

// Whether the flags describe a training workload (--workload, or --tokens-per-step or
// --seq-len: to_plan_request checks they come together), not the optimizer step alone.
inline bool has_workload(const PlanFlags& f) {
  return !f.workload.empty() || f.tokens_per_step > 0 || f.seq_len > 0;
}

// The prime-rl trainer whose host work, AdamW and AC offloader a step has (Workload::trainer),
// where --trainer is not given and a workload is: prime-rl's SFT trainer (`sft`: an SFT
// trainer config, --emit prime-rl-sft) or its RL trainer. One rule for the trainer config
// (trainer_config_in.cc), --emit (trainer_emit.cc) and --runs-on prime-rl (runs_on.cc).
inline void default_prime_rl_trainer(PlanFlags& f, bool sft) {
  if (f.trainer.empty() && has_workload(f)) f.trainer = sft ? "sft" : "rl";
}

// Validates the flags and builds the request. InputError names the offending flag. A
// trainer_config file is applied first, by prepare_plan (prime_rl.h).
PlanRequest to_plan_request(const PlanFlags& flags);

// Sets one flag from text. `name` is the flag without its dashes ("bf16-momentum"; "_" may
// stand for "-"); booleans take true/false/1/0. InputError "--NAME: ..." for an unknown name
// or a value of the wrong type. Model, topology and output flags are not plan flags.
void set_plan_flag(PlanFlags& flags, const std::string& name, const std::string& value);
PlanFlags plan_flags_from_map(const std::map<std::string, std::string>& options);

// A flag's current value as text set_plan_flag takes back; equal values give equal text
// (numbers at full precision, layouts normalized), so it compares flag values.
std::string plan_flag_value(const PlanFlags& flags, const std::string& name);
// The flag's value as last given to set_plan_flag (as typed), else plan_flag_value.
std::string plan_flag_typed(const PlanFlags& flags, const std::string& name);

// The names set_plan_flag accepts, with dashes, in the CLI's order.
std::vector<std::string> plan_flag_names();

}  // namespace muonplan
