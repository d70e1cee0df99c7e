// What a rank keeps on its GPU between steps, per element, by offload mode: stated once for the
// step timeline, the cost model's peak-rank choice and the search's lower bound.
#include "cost/gpu_persistent.h"

#include "muonplan/planfile/step_buffers.h"

namespace muonplan {

double muon_state_bytes(const PlanOptions& o) {
  return double(state_elem_bytes(true, o.bf16_momentum || o.master_bytes() == 2).total());
}
double adamw_state_bytes(const PlanOptions& o) {
  const double fp32 = double(state_elem_bytes(false, false).total());
  return fp32 * double(o.master_bytes()) / double(elem_bytes::kMaster);
}

double frozen_weight_bytes(const PlanOptions& o, const OffloadPolicy& pol) {
  return pol.bf16_compute_copy ? 2 : double(o.master_bytes());
}

double state_bytes(const PlanOptions& o, double muon_elems, double adamw_elems) {
  if (o.optimizer == OptimizerKind::signsgd) return 0;
  return muon_elems * muon_state_bytes(o) + adamw_elems * adamw_state_bytes(o);
}

ElemArray param_array(const PlanOptions& o, const OffloadPolicy& pol, bool trains) {
  if (!trains) return {"frozen_params", frozen_weight_bytes(o, pol)};
  if (pol.master != Residence::gpu) return {"params_bf16", double(elem_bytes::kComputeCopy)};
  const double mb = double(o.master_bytes());
  return {mb == elem_bytes::kMaster ? "params_fp32" : "params_master_bf16", mb};
}

ElemArray grad_array(const PlanOptions& o, const OffloadPolicy& pol) {
  if (pol.master != Residence::gpu) return {"grads_bf16", double(elem_bytes::kComputeCopy)};
  const double mb = double(o.master_bytes());
  return {mb == elem_bytes::kMaster ? "grads_fp32" : "grads_bf16", mb};
}

ElemArray state_array(const PlanOptions& o, const OffloadPolicy& pol, bool muon_rule) {
  if (o.optimizer == OptimizerKind::muon && muon_rule)
    return {"muon_momentum", pol.muon_momentum == Residence::gpu ? muon_state_bytes(o) : 0};
  const bool none = o.optimizer == OptimizerKind::signsgd || pol.adamw_moments != Residence::gpu;
  return {"adamw_moments", none ? 0 : adamw_state_bytes(o)};
}

PersistentRates persistent_rates(const PlanOptions& o, const OffloadPolicy& pol) {
  // Under full offload a training step's gradients leave during backward (the timeline's
  // grads_bf16_in_flight); the optimizer step alone holds them until its chunks copy them.
  const bool grads_kept = pol.master == Residence::gpu || !o.workload;
  // LoRA: only the active runs' slots have an optimizer (has_optimizer); slots are equal.
  const bool lora = o.lora.rank > 0 && o.lora.active_runs_or() < o.lora.adapters;
  const double active = lora ? double(o.lora.active_runs_or()) / double(o.lora.adapters) : 1;
  return {param_array(o, pol).bytes + (grads_kept ? grad_array(o, pol).bytes : 0),
          state_array(o, pol, true).bytes * active, state_array(o, pol, false).bytes * active};
}

}  // namespace muonplan
