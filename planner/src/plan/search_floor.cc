#include "plan/search_floor.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "cost/candidate_context.h"
#include "cost/gpu_persistent.h"
#include "muonplan/base/units.h"
#include "muonplan/planfile/ns_workspace.h"
#include "muonplan/planfile/offload_policy.h"
#include "muonplan/planfile/step_buffers.h"

namespace muonplan {
namespace {

// The cost model's step buffers (cost_model.cc): an owner holds a batch's matrix gathered in
// bf16 (2 bytes an element) and, while it runs NS, the workspace of one matrix; a local chunk
// holds as much for each of its matrices. Some rank owns the largest matrix.
double largest_owner_bytes(const ParamInventory& inv, const PlanOptions& o) {
  double owner_bytes = 0;
  for (const ParamTensor& t : inv.tensors) {
    if (t.rule != UpdateRule::muon || (t.mtp && !o.include_mtp)) continue;
    for (const Partition& part : t.muon_partitions()) {
      const double gathered_bytes = 2.0 * double(part.rows) * double(t.cols());
      const double ns_bytes = double(ns_workspace_layout(1, part.rows, t.cols()).total);
      owner_bytes = std::max(owner_bytes, gathered_bytes + ns_bytes);
    }
  }
  const double check_bytes = double(nonfinite_check_bytes(1, 0));  // one chunk's sum at least
  return owner_bytes + check_bytes;
}

// Rank 0 holds at least one entry of every expert stack at any world (whole entries, the first
// shard the largest) and orthogonalizes it in a local chunk: the largest such matrix, as bf16
// with its NS workspace (and the Nesterov look-ahead), is on rank 0 beside its persistent arrays.
double largest_local_bytes(const ParamInventory& inv, const PlanOptions& o) {
  double local_bytes = 0;
  for (const ParamTensor& t : inv.tensors) {
    if (t.rule != UpdateRule::muon || t.stack_dim != 0 || (t.mtp && !o.include_mtp)) continue;
    for (const Partition& part : t.muon_partitions()) {
      const double mat = double(part.rows) * double(t.cols());
      const double ns_bytes = double(ns_workspace_layout(1, part.rows, t.cols()).total);
      local_bytes = std::max(local_bytes, 2.0 * mat + ns_bytes + (o.nesterov ? 4.0 * mat : 0));
    }
  }
  return local_bytes;
}

// Elements on rank 0 at `world` ranks, of the tensors in `rows` (n -> elements per row).
double rank0_elems(const std::map<int64_t, double>& rows, int64_t world) {
  double elems = 0;
  for (const auto& [n, per_row] : rows) {
    const int64_t first_shard = world <= 0 ? 1 : (n + world - 1) / world;
    elems += double(std::min(n, first_shard)) * per_row;
  }
  return elems;
}

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", bytes / kGiB);
  return buf;
}

}  // namespace

SearchFloor::SearchFloor(const ParamInventory& inv, const Topology& topo, const PlanOptions& o,
                         const std::vector<OffloadMode>& modes) {
  limit_bytes = gpu_limit_bytes(o, topo);
  for (OffloadMode m : modes) {
    PlanOptions om = o;
    om.offload = m;
    // The cost model's per-element rates (its peak-rank selector): a lower bound here, not a
    // printed figure.
    const PersistentRates per = persistent_rates(om, offload_policy(m, o.optimizer_staging));
    modes_.push_back({m, per.all + per.muon, per.all + per.adamw});
  }
  for (const ParamTensor& t : inv.tensors) {
    if ((t.mtp && !o.include_mtp) || t.shape.empty() || t.shape[0] <= 0) continue;
    auto& rows = t.rule == UpdateRule::muon ? muon_rows_ : adamw_rows_;
    rows[t.shape[0]] += double(t.numel()) / double(t.shape[0]);
  }
  owner_bytes_ = largest_owner_bytes(inv, o);
  // Every rank's non-finite check holds one fp32 per tensor at least (cost_model.cc).
  rank0_transient_bytes_ = largest_local_bytes(inv, o) + 4.0 * double(inv.tensors.size());
  context_bytes_ = topo.overheads.cuda_context_gib * kGiB;
  slack_fraction_ = topo.overheads.allocator_slack_fraction;
}

double SearchFloor::gpu_bytes(OffloadMode mode, int64_t world) const {
  double persistent = 0;
  for (const ModeBytes& m : modes_) {
    if (m.mode != mode) continue;
    persistent =
        m.muon_bpe * rank0_elems(muon_rows_, world) + m.adamw_bpe * rank0_elems(adamw_rows_, world);
  }
  const double allocated = std::max(persistent + rank0_transient_bytes_, owner_bytes_);
  return context_bytes_ + allocated * (1 + slack_fraction_);
}

double SearchFloor::min_gpu_bytes(int64_t world) const {
  double best = std::numeric_limits<double>::infinity();
  for (const ModeBytes& m : modes_) best = std::min(best, gpu_bytes(m.mode, world));
  return modes_.empty() ? gpu_bytes(OffloadMode::none, world) : best;
}

std::string SearchFloor::skip_note(OffloadMode mode, int64_t world) const {
  return "not evaluated: at this world every candidate needs at least " +
         gib(gpu_bytes(mode, world)) +
         " GiB per GPU (lower bound: rank 0's persistent arrays, or the largest Muon matrix "
         "gathered with its NS workspace, and the fixed overhead), over the " +
         gib(limit_bytes) + " GiB limit";
}

std::string SearchFloor::why_first_only(size_t node_counts, int64_t last_world) const {
  if (node_counts <= 1) return "";
  char buf[320];
  std::snprintf(buf, sizeof buf,
                ": every candidate needs at least %.6g GiB per GPU even at the largest node "
                "count (rank 0's persistent arrays, or the largest Muon matrix gathered with its "
                "NS workspace, and the fixed overhead), over the %.3g GiB limit, so only the "
                "first of %zu node counts was evaluated",
                min_gpu_bytes(last_world) / kGiB, limit_bytes / kGiB, node_counts);
  return buf;
}

}  // namespace muonplan
