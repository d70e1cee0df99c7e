// A lower bound on any candidate's GPU peak, whatever its node count, layout or offload mode:
// the search stops early when even that is over the limit (docs/planner.md, "Search").
#pragma once

#include <string>

#include "muonplan/param_inventory.h"
#include "muonplan/plan_options.h"
#include "muonplan/topology.h"

namespace muonplan {

// Bytes every plan of `inv` needs on its busiest GPU, at any world size: the fixed per-GPU
// overhead, plus on the owner of the largest Muon matrix that matrix gathered (bf16) with the
// NS workspace of one matrix and one non-finite-check sum, plus the allocator slack on those.
// More ranks shrink every other term, never these.
double gpu_floor_bytes(const ParamInventory& inv, const Topology& topo, const PlanOptions& o);

// gpu_floor_bytes against the GPU limit in force (--gpu-memory-gib, else the topology's).
struct NoFitFloor {
  double floor_bytes = 0, limit_bytes = 0;
  bool over_limit = false;
  // ": every candidate needs at least X GiB per GPU ..., only the first of N node counts
  // evaluated" when over the limit and there were more to try, else "".
  std::string why(size_t node_counts) const;
};
NoFitFloor no_fit_floor(const ParamInventory& inv, const Topology& topo, const PlanOptions& o);

}  // namespace muonplan
