// Owner assignment for Muon batches: which rank orthogonalizes which batch (docs/planner.md).
#pragma once

#include <algorithm>

#include "muonplan/planner/chunks.h"

namespace muonplan {

namespace detail {
// Bytes (bf16) of matrix m's rows within `held`, a rank's rows of m's tensor.
inline double held_slice_bytes(Range held, const MatrixRef& m) {
  const int64_t begin = std::max(held.begin, m.row_offset);
  const int64_t end = std::min(held.end, m.row_offset + m.rows);
  return end > begin ? 2.0 * double(end - begin) * double(m.cols) : 0.0;
}
// Bytes of group rank r's slice of matrix m (bf16), under Shard(0) over group_size ranks.
// Inline: called once per matrix and holder in the owner search and the cost model.
inline double slice_bytes(const ParamInventory& inv, const MatrixRef& m, int group_size,
                          int group_rank) {
  return held_slice_bytes(chunk_range(inv.tensors[m.tensor].shape[0], group_size, group_rank), m);
}
// The group positions [begin, end) whose slice of m is not empty (a torch.chunk split gives a
// contiguous run): loops over them cost the matrix's rows, not the group size.
Range holders(const ParamInventory& inv, const MatrixRef& m, int group_size);
// Calls f(r, slice_bytes(inv, m, group_size, r)) for each holder r of m, in order: the shard
// size worked out once, no division per holder (the loops over every matrix's holders are most
// of a large world's candidate).
template <class F>
void for_each_slice(const ParamInventory& inv, const MatrixRef& m, int group_size, F f) {
  const int64_t n = inv.tensors[m.tensor].shape[0];
  const int64_t per = (n + group_size - 1) / group_size;  // chunk_range's shard size
  const Range h = holders(inv, m, group_size);
  for (int64_t r = h.begin; r < h.end; ++r) {
    const int64_t held_begin = std::min(n, per * r);
    f(int(r), held_slice_bytes({held_begin, std::min(n, held_begin + per)}, m));
  }
}
}  // namespace detail

// Sets owners (and padding) of every muon_batch chunk in plan.
void assign_owners(const ParamInventory& inv, ChunkPlan& plan, OwnerStrategy strategy,
                   int ns_iterations);

// The balanced strategy with batches formed after owners are chosen (owners_balanced.cc).
// Replaces plan's muon batches and returns true when the result's max bytes and max FLOPs
// are within the limits (those of round-robin); leaves plan untouched otherwise.
bool balance_with_rebatching(const ParamInventory& inv, ChunkPlan& plan,
                             const std::vector<double>& fixed_flops, int ns_iterations,
                             double max_bytes_limit, double max_flops_limit);

// Per world rank: all-to-all bytes sent and NS FLOPs of the whole step.
RankLoads compute_loads(const ParamInventory& inv, const ChunkPlan& plan, int ns_iterations);

}  // namespace muonplan
