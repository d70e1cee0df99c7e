// A lower bound on a candidate's GPU peak at a world size, whatever its layout, for each
// offload mode the search tries: node counts where it is over the limit in every mode are not
// evaluated, and the search stops early when it is over at every node count
// (docs/planner.md, "Search").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "muonplan/planfile/param_inventory.h"
#include "muonplan/planfile/plan_options.h"
#include "muonplan/planner/topology.h"

namespace muonplan {

class SearchFloor {
 public:
  // `modes`: the offload modes the search tries (each with o's other options).
  SearchFloor(const ParamInventory& inv, const Topology& topo, const PlanOptions& o,
              const std::vector<OffloadMode>& modes);

  // Bytes any candidate in `mode` needs on its busiest GPU at `world` ranks: the fixed per-GPU
  // overhead plus, with the allocator slack on it, the larger of
  //  - rank 0's persistent GPU arrays: every layout gives rank 0 the first ceil(n / world) rows
  //    (or expert entries) of each n-row tensor at least (chunk_range's first shard), with
  //    its local NS of one expert matrix and its non-finite-check sums, and
  //  - on the owner of the largest Muon matrix, that matrix gathered (bf16) with one matrix's
  //    NS workspace and one non-finite-check sum.
  // Non-increasing in `world`. world <= 0 means unbounded (one row of every tensor).
  double gpu_bytes(OffloadMode mode, int64_t world) const;
  // The smallest gpu_bytes over the modes; whether some mode may fit at `world`.
  double min_gpu_bytes(int64_t world) const;
  bool may_fit(int64_t world) const { return min_gpu_bytes(world) <= limit_bytes; }
  // The not-evaluated note of a candidate skipped at `world` in `mode`.
  std::string skip_note(OffloadMode mode, int64_t world) const;
  // Why only the first of `node_counts` counts was evaluated, where even the last count's
  // world (`last_world`) cannot fit: ": every candidate ... needs at least X GiB ...".
  std::string why_first_only(size_t node_counts, int64_t last_world) const;

  double limit_bytes = 0;  // --gpu-memory-gib, else the topology's GPU memory

 private:
  struct ModeBytes {
    OffloadMode mode;
    double muon_bpe, adamw_bpe;  // persistent bytes per element of each rule
  };
  std::vector<ModeBytes> modes_;
  // Elements per row (entry) summed over the tensors with n rows (entries), by rule.
  std::map<int64_t, double> muon_rows_, adamw_rows_;
  double owner_bytes_ = 0;            // largest matrix gathered + NS workspace + check sum
  double rank0_transient_bytes_ = 0;  // rank 0's local expert NS and check sums
  double context_bytes_ = 0, slack_fraction_ = 0;
};

}  // namespace muonplan
