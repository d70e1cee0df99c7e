#include "muonplan/planner/chunks.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "muonplan/base/error.h"
#include "muonplan/planner/ns_model.h"
#include "muonplan/planner/owners.h"

namespace muonplan {

namespace detail {

Range holders(const ParamInventory& inv, const MatrixRef& m, int group_size) {
  const int64_t n = inv.tensors[m.tensor].shape[0];
  const int64_t per = (n + group_size - 1) / group_size;
  if (m.rows <= 0 || per <= 0) return {0, 0};
  return {m.row_offset / per, std::min<int64_t>(group_size, (m.row_offset + m.rows - 1) / per + 1)};
}

}  // namespace detail

double batch_bytes_sent(const ParamInventory& inv, const Chunk& c, int r) {
  double sent = 0;
  const int total = static_cast<int>(c.owners.size());
  for (int k = 0; k < total; ++k) {
    // Padding matrices have the shape and sharding of the batch's first matrix.
    const MatrixRef& m = c.matrices[std::min<int>(k, c.matrices.size() - 1)];
    const double mine = detail::slice_bytes(inv, m, c.group_size, r);
    if (c.owners[k] != r) {
      sent += mine;
    } else {
      sent += 2.0 * double(m.rows) * double(m.cols) - mine;
    }
  }
  return sent;
}

namespace {

struct Collected {
  std::vector<Chunk> chunks;
  std::vector<int> first_tensor;  // ordering key of each chunk
};

void add_local_chunks(const ParamTensor& t, int ti, const Layout& layout, Collected& out) {
  int64_t offset = 0;
  const std::vector<Partition> parts = t.muon_partitions();  // a copy: keep it alive
  for (size_t pi = 0; pi < parts.size(); ++pi) {
    const Partition& part = parts[pi];
    Chunk c;
    c.kind = Chunk::Kind::muon_local;
    c.rows = part.rows;
    c.cols = t.cols();
    c.matrices.push_back({ti, int(pi), offset, part.rows, t.cols()});
    if (t.stack_dim == 0)
      c.local = LocalCounts{true, t.stack_count(), layout.ep, layout.fsdp / layout.ep};
    c.params = t.stack_count() * part.rows * t.cols();
    c.param_names.push_back(t.name);
    c.group_size = 1;
    out.chunks.push_back(std::move(c));
    out.first_tensor.push_back(ti);
    offset += part.rows;
  }
}

}  // namespace

bool same_chunking(const ParamInventory& inv, bool include_mtp, const Layout& a, const Layout& b,
                   int /*world: the rules repeat per shard group of fsdp ranks*/) {
  if (a.fsdp != b.fsdp) return false;  // shard_kind and the groups follow fsdp alone
  if (a.ep == b.ep) return true;
  std::set<int64_t> entries;  // of the expert stacks that become local chunks
  for (const ParamTensor& t : inv.tensors) {
    if (t.rule == UpdateRule::muon && t.stack_dim == 0 && (include_mtp || !t.mtp))
      entries.insert(t.stack_count());
  }
  for (int64_t n : entries) {
    const LocalCounts ra{true, n, a.ep, a.fsdp / a.ep}, rb{true, n, b.ep, b.fsdp / b.ep};
    // Rank r = e + ep * d holds entries only while d is under its ep slice's size, at most
    // ceil(n / ep): past ep * ceil(n / ep) both rules give 0.
    const auto extent = [&](int ep) { return int64_t(ep) * ((n + ep - 1) / ep); };
    // One shard group: the replica groups hold alike (shards.h).
    const int64_t ranks = std::min<int64_t>(a.fsdp, std::max(extent(a.ep), extent(b.ep)));
    for (int r = 0; r < ranks; ++r) {
      if (ra.at(r) != rb.at(r)) return false;
    }
  }
  return true;
}

ChunkPlan relayout(ChunkPlan plan, const Layout& layout) {
  plan.layout = layout;
  for (Chunk& c : plan.chunks) {
    if (c.kind != Chunk::Kind::muon_local || !c.local.stacked) continue;
    c.local.ep = layout.ep;  // as add_local_chunks sets them
    c.local.dp = layout.fsdp / layout.ep;
  }
  return plan;
}

ChunkPlan build_chunks(const ParamInventory& inv, bool include_mtp, const Layout& layout, int world,
                       OwnerStrategy strategy, int ns_iterations) {
  ChunkPlan plan;
  plan.owners = strategy;
  plan.world = world;
  plan.layout = layout;
  const int g = layout.fsdp;
  Collected col;
  // Row-sharded matrices grouped by shape, in inventory order within a shape.
  std::map<std::pair<int64_t, int64_t>, std::vector<MatrixRef>> by_shape;
  std::map<std::pair<int64_t, int64_t>, int> shape_first;
  Chunk adamw;
  adamw.kind = Chunk::Kind::adamw_group;
  for (int ti = 0; ti < static_cast<int>(inv.tensors.size()); ++ti) {
    const ParamTensor& t = inv.tensors[ti];
    if (t.mtp && !include_mtp) continue;
    if (t.rule == UpdateRule::adamw) {
      adamw.params += t.numel();
      adamw.param_names.push_back(t.name);
      continue;
    }
    if (shard_kind(t, layout) != Placement::Kind::row_sharded) {
      add_local_chunks(t, ti, layout, col);
      continue;
    }
    int64_t offset = 0;
    const std::vector<Partition> parts = t.muon_partitions();  // a copy: keep it alive
    for (size_t pi = 0; pi < parts.size(); ++pi) {
      const Partition& part = parts[pi];
      const auto key = std::make_pair(part.rows, t.cols());
      if (!shape_first.count(key)) shape_first[key] = ti;
      by_shape[key].push_back({ti, int(pi), offset, part.rows, t.cols()});
      offset += part.rows;
    }
  }
  for (auto& [shape, mats] : by_shape) {
    for (size_t b = 0; b < mats.size(); b += g) {
      Chunk c;
      c.kind = Chunk::Kind::muon_batch;
      c.rows = shape.first;
      c.cols = shape.second;
      c.group_size = g;
      c.matrices.assign(mats.begin() + b, mats.begin() + std::min(mats.size(), b + g));
      for (const MatrixRef& m : c.matrices) {
        c.params += m.rows * m.cols;
        const std::string& name = inv.tensors[m.tensor].name;
        if (c.param_names.empty() || c.param_names.back() != name) c.param_names.push_back(name);
      }
      col.first_tensor.push_back(c.matrices.front().tensor);
      col.chunks.push_back(std::move(c));
    }
  }
  // Step order: front of the model first, so offload and overlap follow the backward pass.
  std::vector<size_t> order(col.chunks.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return col.first_tensor[a] < col.first_tensor[b]; });
  for (size_t i : order) plan.chunks.push_back(std::move(col.chunks[i]));
  if (adamw.params > 0) plan.chunks.push_back(std::move(adamw));

  assign_owners(inv, plan, strategy, ns_iterations);
  plan.loads = compute_loads(inv, plan, ns_iterations);
  return plan;
}

}  // namespace muonplan
