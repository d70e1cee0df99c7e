// The bytes of prime-rl's per-step weight broadcast (weight_broadcast.h).
#include "cost/weight_broadcast.h"

#include <algorithm>

#include "muonplan/planner/workload.h"

namespace muonplan {

double weight_broadcast_bytes(const ParamInventory& inv, const PlanOptions& o) {
  if (!o.workload || o.workload->trainer != "rl") return 0;
  if (o.lora.rank > 0) {
    // inv.tensors holds the adapters, every slot alike: one run's slot is their share.
    double adapters = 0;
    for (const ParamTensor& t : inv.tensors)
      if (!t.mtp || o.include_mtp) adapters += double(t.numel());
    const double slots = double(std::max<int64_t>(1, o.lora.adapters));
    return adapters / slots * double(o.master_bytes()) * double(o.lora.active_runs_or());
  }
  double elems = 0;
  inv.for_each_weight([&](const ParamTensor& t, bool) {
    if (!t.mtp || o.include_mtp) elems += double(t.numel());
  });
  return 2 * elems;  // bf16, the inference servers' weights
}

}  // namespace muonplan
