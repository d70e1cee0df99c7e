// The rates the optimizer-step time model runs at, and what one Muon batch exchanges: the
// figures cost_model.cc's stages are timed with. Internal to the cost model.
#pragma once

#include <vector>

#include "muonplan/planner/cost_model.h"

namespace muonplan::step_cost {

// Rates the time model uses, from the topology and its calibration: the one set of link rates
// of a candidate (candidate_context.h), the optimizer step's and the training step's.
struct Rates {
  double hbm_bps, cpu_bps_per_rank;
  double h2d_bps, d2h_bps;  // the optimizer state's PCIe: pageable where staged unpinned
  double pinned_d2h_bps;    // PCIe D2H into pinned memory (the AC offload's buffers)
  double pinned_h2d_bps;    // PCIe H2D from pinned memory (the AC offload's buffers back)
  // In the node: its route's bottleneck (the inter-node rate on a node of one GPU). Between
  // nodes: the route's bottleneck and the GPU's share of its NICs, the narrower.
  double intra_bps, inter_bps;
  double intra_latency_s, inter_latency_s;
  double collective_s;  // fixed cost per all-to-all (calibration)
};

Rates rates(const Topology& topo, const PlanOptions& o, int gpus_per_node);

// A group of `group` consecutive ranks stays on one node when it fits in one: its collectives
// run at the intra-node rate, else at the inter-node one.
inline bool group_on_one_node(int group, int gpus_per_node) {
  return group <= gpus_per_node && gpus_per_node % group == 0;
}

// Matrices of a batch whose slices are alike on every position: the same tensor row count,
// row offset and shape (step_traffic.cc); their owners, and how many are real (not padding).
struct SliceGroup {
  MatrixRef m;
  int64_t n = 0;  // the tensor's rows, which fix the shard size
  int real = 0;
  std::vector<int> owners;
};

// Per group position: elements of the batch it holds, and the seconds of each exchange; and
// what its buffers are sized by (muonplan/planfile/step_buffers.h's batch_buffers): `buffer_elems`
// of its slices (padding matrices' zero slices too: they travel), whether it owns a matrix (a
// gathered copy and an NS workspace; padding owners too), and its largest slice of a real
// matrix (a `chunked` staging piece).
// The arrays are sized to the group and zero past `touched`: one BatchTraffic serves every
// batch of a candidate, and batch_traffic clears only the positions the last batch touched, so
// a batch costs its holders and owners, not the group (a large world's groups are mostly
// ranks holding nothing of a batch).
struct BatchTraffic {
  std::vector<double> held_elems;
  double exchange_s = 0;  // one exchange (the return exchange moves the same bytes back)
  std::vector<double> buffer_elems, largest_slice;
  std::vector<char> owns;
  std::vector<int> touched;  // positions holding a slice or owning a matrix, each once
  double max_held_elems() const;
  // Exchange 1 bytes per position, by link (exchange 2 is its mirror image).
  std::vector<double> send_in, send_out, recv_in, recv_out;
  // batch_traffic's scratch, kept for the next batch: its slice groups, a group's bytes by node.
  std::vector<SliceGroup> groups;
  std::vector<std::pair<int, double>> node_bytes;
};

// Fills `bt` (a previous batch's, or empty) with batch `c`'s traffic.
void batch_traffic(const ParamInventory& inv, const Chunk& c, const Rates& rt, int gpus_per_node,
                   BatchTraffic& bt);

}  // namespace muonplan::step_cost
