// The bytes of prime-rl's per-step weight broadcast (weight_broadcast.h).
#include "cost/weight_broadcast.h"

#include <algorithm>
#include <set>
#include <utility>

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

NcclBroadcast nccl_broadcast(const ParamInventory& inv, const PlanOptions& o,
                             const step_cost::Rates& r, int world, int gpus_per_node) {
  NcclBroadcast b;
  const int fsdp = o.layout.fsdp > 0 ? o.layout.fsdp : world;
  const double f = double(fsdp);
  const bool group_local = step_cost::group_on_one_node(fsdp, gpus_per_node);
  const double gather_bps = group_local ? r.intra_bps : r.inter_bps;
  const double gather_lat = group_local ? r.intra_latency_s : r.inter_latency_s;
  // Inference beside the trainer on its node (the rl launcher on one node) while the trainer
  // stays on one node; else across the network from rank 0's NIC.
  b.peers_local = o.workload && o.workload->inference_on_trainer_node && world <= gpus_per_node;
  const double send_bps = b.peers_local ? r.intra_bps : r.inter_bps;
  const double send_lat = b.peers_local ? r.intra_latency_s : r.inter_latency_s;
  std::set<std::pair<bool, int64_t>> groups;
  double elements = 0;
  for (const ParamTensor& t : inv.tensors) {
    if (t.mtp && !o.include_mtp) continue;
    groups.insert({t.mtp, t.layer});
    elements += double(t.numel());
    ++b.tensors;
  }
  b.groups = int64_t(groups.size());
  b.bytes = 2 * elements;
  // Each rank: its shard read in the masters' dtype and written in bf16; the gather brings in
  // the rest, (f - 1) / f of each tensor, over a ring of f - 1 hops.
  b.gather_s = elements / f * double(o.master_bytes() + 2) / r.hbm_bps +
               b.bytes * (f - 1) / f / gather_bps + double(b.tensors) * (f - 1) * gather_lat;
  // Rank 0: the concatenation reads and writes each group once; then the broadcasts.
  b.send_s = 2 * b.bytes / r.hbm_bps + b.bytes / send_bps + double(b.groups) * 3 * send_lat;
  return b;
}

}  // namespace muonplan
