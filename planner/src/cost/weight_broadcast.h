// prime-rl's RL trainer hands its weights to the inference servers at the top of every step
// after the first, before `time/step`'s clock starts: the plan's `between_steps_s` list
// (workload_cost.cc; docs/planner.md section 8, "Between steps"). Internal to the cost model.
#pragma once

#include "muonplan/planfile/param_inventory.h"
#include "muonplan/planfile/plan_options.h"

namespace muonplan {

// The bytes rank 0 saves per step with the filesystem broadcast, prime-rl's default
// (trainer/rl/broadcast/filesystem.py, read at the matrix's January 2026 code and later):
// full fine-tuning gathers every parameter to rank 0 in bf16 (DTensor full_tensor, a blocking
// copy to the host per tensor), converts it to the Hugging Face layout and writes it as
// safetensors; LoRA writes, for each run ready to update, that run's adapter slot as the
// trainer holds it (the masters' dtype). 0 where nothing is broadcast: no RL trainer (SFT saves
// weights at checkpoint intervals only; the muonplan runtime has no inference servers), or a
// LoRA job with no active run (prime-rl's benchmark).
double weight_broadcast_bytes(const ParamInventory& inv, const PlanOptions& o);

}  // namespace muonplan
