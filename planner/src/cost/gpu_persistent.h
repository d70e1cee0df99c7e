// The arrays a rank keeps on its GPU between steps, per element: what the step timeline
// allocates each parameter's shard, gradient and optimizer state by (step_timeline*.cc), and the
// optimizer-state bytes per element (docs/muon-step.md section 5).
#pragma once

#include "muonplan/planfile/offload_policy.h"
#include "muonplan/planfile/plan_options.h"

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

// A parameter's shard as the rank keeps it between steps, its gradient shard and its optimizer
// state: the term (timeline kind) each is counted under and its bytes per element. The one rule
// the step timeline (step_timeline*.cc) names and sizes them by, and the cost model's frozen
// weights and per-element rates below. Parameters: LoRA's frozen base weights
// (frozen_weight_bytes); under full offload the bf16 compute copy; else the FSDP master in
// optimization_dtype (float32 unless set). Gradients: the master's dtype, or bf16 under full
// offload (the optimizer step alone holds them until its chunks copy them to the host). State:
// Muon's momentum for a Muon-rule parameter under Muon, else AdamW's two moments (half the
// bytes each); 0 B where the policy keeps it on the host, or under signSGD (no state).
struct ElemArray {
  const char* name;
  double bytes;
};
ElemArray param_array(const PlanOptions& o, const OffloadPolicy& pol, bool trains = true);
ElemArray grad_array(const PlanOptions& o, const OffloadPolicy& pol);
ElemArray state_array(const PlanOptions& o, const OffloadPolicy& pol, bool muon_rule);

// GPU bytes per element a rank keeps between steps: every trained element (`all`: its shard and
// gradient), and a Muon-rule or AdamW-rule element's optimizer state on top. From the arrays
// above; a training step's gradients count where they outlive backward (the master on the GPU),
// and under LoRA the state is the active runs' share of the slots. A selector, not a printed
// figure: it picks the busiest rank (cost_model.cc) and bounds the search from below
// (plan/search_floor.cc); the printed terms are the step timeline's tensors at its peak.
struct PersistentRates {
  double all = 0, muon = 0, adamw = 0;
};
PersistentRates persistent_rates(const PlanOptions& o, const OffloadPolicy& pol);

}  // namespace muonplan
