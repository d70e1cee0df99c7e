// The GPU's persistent bytes per rank, by offload mode: stated once for the cost model
// (cost_model.cc) and the search's lower bound (plan/search_floor.cc).
#include "cost/gpu_persistent.h"

#include <string>

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

std::vector<Term> gpu_persistent_terms(const PlanOptions& o, const OffloadPolicy& pol, double n_all,
                                       double n_mu, double n_aw) {
  std::vector<Term> t;
  const ElemArray param = param_array(o, pol), grad = grad_array(o, pol);
  if (pol.master != Residence::gpu) {
    t.push_back({param.name, param.bytes * n_all, "2 B x local params (compute copy)"});
    // In a training step each unit's gradients leave during backward (the step timeline's
    // grads_bf16_in_flight); the optimizer step alone holds them until its chunks copy them.
    if (!o.workload)
      t.push_back({grad.name, grad.bytes * n_all, "2 B x local params, until copied to host"});
  } else {
    // optimization_dtype bfloat16: the masters and their gradient shards are bf16.
    const std::string b = std::to_string(int(param.bytes)) + " B x local params";
    t.push_back(
        {param.name, param.bytes * n_all,
         b + " (FSDP master, optimization_dtype " + dtype_name(int64_t(param.bytes)) + ")"});
    t.push_back({grad.name, grad.bytes * n_all, b});
  }
  if (o.optimizer == OptimizerKind::muon) {
    if (pol.muon_momentum == Residence::gpu) {
      t.push_back({"muon_momentum", n_mu * muon_state_bytes(o),
                   std::to_string(int(muon_state_bytes(o))) + " B x local Muon params"});
    }
    if (pol.adamw_moments == Residence::gpu)
      t.push_back({"adamw_moments", n_aw * adamw_state_bytes(o),
                   std::to_string(int(adamw_state_bytes(o))) + " B x local AdamW params"});
  } else if (o.optimizer == OptimizerKind::adamw && pol.adamw_moments == Residence::gpu) {
    // LoRA: only the active runs' slots have an AdamW (--lora-active-runs); slots are equal.
    const bool lora = o.lora.rank > 0 && o.lora.active_runs_or() < o.lora.adapters;
    const double active = lora ? double(o.lora.active_runs_or()) / double(o.lora.adapters) : 1;
    t.push_back({"adamw_moments", state_bytes(o, n_mu, n_aw) * active,
                 std::to_string(int(adamw_state_bytes(o))) + " B x local params" +
                     (lora ? " of the " + std::to_string(o.lora.active_runs_or()) + " active of " +
                                 std::to_string(o.lora.adapters) + " LoRA slots"
                           : "")});
  }
  return t;
}

}  // namespace muonplan
