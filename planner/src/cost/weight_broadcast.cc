// The bytes of prime-rl's per-step weight broadcast (weight_broadcast.h).
#include "cost/weight_broadcast.h"

#include <algorithm>

#include "muonplan/planner/workload.h"

namespace muonplan {

double weight_broadcast_bytes(const ParamInventory& inv, const PlanOptions& o) {
  if (!o.workload || o.workload->trainer != "rl") return 0;
  // inv.tensors: every parameter under full fine-tuning; under LoRA the adapters, every slot
  // alike, so one run's slot is their share.
  const double trained = double(inv.summarize(o.include_mtp).params_total);
  if (o.lora.rank > 0) {
    const double slots = double(std::max<int64_t>(1, o.lora.adapters));
    return trained / slots * double(o.master_bytes()) * double(o.lora.active_runs_or());
  }
  return 2 * trained;  // bf16, the inference servers' weights
}

}  // namespace muonplan
