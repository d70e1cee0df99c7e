#include "plan/search_floor.h"

#include <algorithm>
#include <cstdio>

#include "muonplan/ns_workspace.h"
#include "muonplan/units.h"

namespace muonplan {

double gpu_floor_bytes(const ParamInventory& inv, const Topology& topo, const PlanOptions& o) {
  // The cost model's step buffers (cost_model.cc): an owner holds a batch's matrix gathered
  // in bf16 (2 bytes an element) and, while it runs NS, the workspace of one matrix; a local
  // chunk holds as much for each of its matrices. Some rank owns the largest matrix.
  double owner_bytes = 0;
  for (const ParamTensor& t : inv.tensors) {
    if (t.rule != UpdateRule::muon || (t.mtp && !o.include_mtp)) continue;
    for (const Partition& part : t.muon_partitions()) {
      const double gathered_bytes = 2.0 * double(part.rows) * double(t.cols());
      const double ns_bytes = double(ns_workspace_layout(1, part.rows, t.cols()).total);
      owner_bytes = std::max(owner_bytes, gathered_bytes + ns_bytes);
    }
  }
  const double check_bytes = 4;  // one chunk's fp32 non-finite sum
  const double allocated_bytes = owner_bytes + check_bytes;
  const double slack_bytes = allocated_bytes * topo.overheads.allocator_slack_fraction;
  const double context_bytes = topo.overheads.cuda_context_gib * kGiB;
  return context_bytes + allocated_bytes + slack_bytes;
}

NoFitFloor no_fit_floor(const ParamInventory& inv, const Topology& topo, const PlanOptions& o) {
  NoFitFloor f;
  f.floor_bytes = gpu_floor_bytes(inv, topo, o);
  f.limit_bytes = (o.gpu_memory_gib > 0 ? o.gpu_memory_gib : topo.node.gpu.memory_gib) * kGiB;
  f.over_limit = f.floor_bytes > f.limit_bytes;
  return f;
}

std::string NoFitFloor::why(size_t node_counts) const {
  if (!over_limit || node_counts <= 1) return "";
  char buf[256];
  std::snprintf(buf, sizeof buf,
                ": every candidate needs at least %.6g GiB per GPU (the largest Muon matrix "
                "gathered with its NS workspace, and the fixed overhead), over the %.3g GiB "
                "limit, so only the first of %zu node counts was evaluated",
                floor_bytes / kGiB, limit_bytes / kGiB, node_counts);
  return buf;
}

}  // namespace muonplan
