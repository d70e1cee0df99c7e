// The arrays a rank keeps on its GPU between steps, as named terms (docs/planner.md), and the
// optimizer-state bytes per element (docs/muon-step.md section 5).
#pragma once

#include <vector>

#include "muonplan/planfile/offload_policy.h"
#include "muonplan/planfile/plan_options.h"
#include "muonplan/planfile/prediction.h"

namespace muonplan {

// Optimizer state per element. With optimization_dtype bfloat16 (Workload::master_bytes 2)
// torch's optimizers make their state like the bf16 master (zeros_like): 2 B per array.
double muon_state_bytes(const PlanOptions& o);   // 2 (bf16 momentum or masters) or 4
double adamw_state_bytes(const PlanOptions& o);  // 8: two fp32 moments; 4 with bf16 masters
double state_bytes(const PlanOptions& o, double muon_elems, double adamw_elems);

// Bytes per element of a frozen base weight's shard (LoRA, lora.h) between steps. prime-rl
// builds the model in its optimization_dtype (float32 unless set: Workload::master_bytes),
// applies LoRA, then FSDP: the frozen weights keep that dtype, with no gradient or optimizer
// state (FSDP2 casts them to bf16 only to gather them). Under full offload it casts the whole
// model to bf16 once the masters are on the host: 2 B, where the compute copy is.
double frozen_weight_bytes(const PlanOptions& o, const OffloadPolicy& pol);

// A parameter's shard as the rank keeps it between steps, and its gradient shard: the term (or
// timeline kind) each is counted under and its bytes per element. The one rule for both, which
// gpu_persistent_terms, the cost model's frozen weights and the step timeline
// (step_timeline*.cc) name and size them by. Parameters: LoRA's frozen base weights
// (frozen_weight_bytes); under full offload the bf16 compute copy; else the FSDP master in
// optimization_dtype (float32 unless set). Gradients: the master's dtype, or bf16 under full
// offload (the optimizer step alone holds them until its chunks copy them to the host).
struct ElemArray {
  const char* name;
  double bytes;
};
ElemArray param_array(const PlanOptions& o, const OffloadPolicy& pol, bool trains = true);
ElemArray grad_array(const PlanOptions& o, const OffloadPolicy& pol);

// Persistent bytes of a rank holding `n_all` elements, `n_mu` of them Muon's and `n_aw`
// AdamW's, where `pol` (the offload mode's policy) keeps each array. Linear in the counts.
std::vector<Term> gpu_persistent_terms(const PlanOptions& o, const OffloadPolicy& pol, double n_all,
                                       double n_mu, double n_aw);

}  // namespace muonplan
