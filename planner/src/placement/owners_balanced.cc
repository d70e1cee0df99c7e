// The balanced strategy with free batch formation. Round-robin keeps the batches fixed (runs
// of g same-shape matrices in model order), so a short batch loads its owners and nothing can
// compensate. Here owners are chosen first and batches formed after: each rank may own up to
// ceil(n/g) + 1 matrices of a shape that has n, and batch j of a shape holds every rank's j-th
// matrix of it (distinct owners, as an exchange needs). LPT places the largest matrices first
// on the least loaded rank; local search then moves or swaps matrices between ranks, accepting
// a change only when neither the max bytes nor the max NS FLOPs grows and the sum of squared
// normalized loads falls. The cost: at most one extra batch per shape.
#include <algorithm>
#include <map>
#include <numeric>

#include "muonplan/ns_model.h"
#include "muonplan/owners.h"

namespace muonplan {
namespace {

struct Mat {
  MatrixRef ref;
  int shape = 0;
  size_t order = 0;  // position in the round-robin chunk list: model order
  double whole = 0, flops = 0;
  std::vector<double> slice;  // bytes per group rank
};

struct State {
  int g = 1;
  std::vector<Mat> mats;
  std::vector<int> cap;                 // per shape
  std::vector<std::vector<int>> count;  // [shape][rank]
  std::vector<int> owner;               // per mat
  std::vector<double> bytes, flops;     // per rank
  double nb = 1, nf = 1;

  double delta_bytes(int m, int r) const { return mats[m].whole - 2 * mats[m].slice[r]; }
  double sq(double b, double f) const { return (b / nb) * (b / nb) + (f / nf) * (f / nf); }
  void place(int m, int r) {
    owner[m] = r;
    ++count[mats[m].shape][r];
    bytes[r] += delta_bytes(m, r);
    flops[r] += mats[m].flops;
  }
  void unplace(int m) {
    const int r = owner[m];
    --count[mats[m].shape][r];
    bytes[r] -= delta_bytes(m, r);
    flops[r] -= mats[m].flops;
    owner[m] = -1;
  }
};

double max_of(const std::vector<double>& v) {
  return *std::max_element(v.begin(), v.end());
}

// Maximum of v with entries i and j replaced by vi and vj.
double max_with(const std::vector<double>& v, int i, double vi, int j, double vj) {
  double m = std::max(vi, vj);
  for (size_t k = 0; k < v.size(); ++k) {
    if (int(k) != i && int(k) != j) m = std::max(m, v[k]);
  }
  return m;
}

void lpt(State& s) {
  std::vector<int> order(s.mats.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return s.mats[a].whole != s.mats[b].whole ? s.mats[a].whole > s.mats[b].whole
                                              : s.mats[a].flops > s.mats[b].flops;
  });
  for (int m : order) {
    int best = -1;
    double best_score = 0, best_bytes = 0;
    for (int r = 0; r < s.g; ++r) {
      if (s.count[s.mats[m].shape][r] >= s.cap[s.mats[m].shape]) continue;
      const double b = s.bytes[r] + s.delta_bytes(m, r), f = s.flops[r] + s.mats[m].flops;
      const double score = std::max(b / s.nb, f / s.nf);
      if (best < 0 || score < best_score || (score == best_score && b < best_bytes)) {
        best = r;
        best_score = score;
        best_bytes = b;
      }
    }
    s.place(m, best);
  }
}

// One improving move or swap from a heavily loaded rank; false when none is found.
bool improve(State& s, const std::vector<std::vector<int>>& owned) {
  const double max_b = max_of(s.bytes), max_f = max_of(s.flops);
  std::vector<int> ranks(s.g);
  std::iota(ranks.begin(), ranks.end(), 0);
  std::sort(ranks.begin(), ranks.end(), [&](int a, int b) {
    return std::max(s.bytes[a] / s.nb, s.flops[a] / s.nf) >
           std::max(s.bytes[b] / s.nb, s.flops[b] / s.nf);
  });
  for (int scan = 0; scan < std::min(s.g, 4); ++scan) {
    const int i = ranks[scan];
    double best_gain = 1e-12;
    int best_m = -1, best_j = -1, best_m2 = -1;
    // Consider giving m to j and taking m2 (-1: nothing) back; keep it if it is the best so far.
    auto consider = [&](int m, int j, int m2) {
      const double take_b = m2 >= 0 ? s.delta_bytes(m2, i) : 0,
                   take_f = m2 >= 0 ? s.mats[m2].flops : 0;
      const double give_b = m2 >= 0 ? s.delta_bytes(m2, j) : 0;
      const double bi = s.bytes[i] - s.delta_bytes(m, i) + take_b;
      const double fi = s.flops[i] - s.mats[m].flops + take_f;
      const double bj = s.bytes[j] + s.delta_bytes(m, j) - give_b;
      const double fj = s.flops[j] + s.mats[m].flops - take_f;
      if (max_with(s.bytes, i, bi, j, bj) > max_b || max_with(s.flops, i, fi, j, fj) > max_f)
        return;
      const double gain =
          s.sq(s.bytes[i], s.flops[i]) + s.sq(s.bytes[j], s.flops[j]) - s.sq(bi, fi) - s.sq(bj, fj);
      if (gain > best_gain) {
        best_gain = gain;
        best_m = m;
        best_j = j;
        best_m2 = m2;
      }
    };
    for (int m : owned[i]) {
      const int sh = s.mats[m].shape;
      for (int j = 0; j < s.g; ++j) {
        if (j == i) continue;
        if (s.count[sh][j] < s.cap[sh]) consider(m, j, -1);  // move m to j
        // Swap m with a smaller matrix m2 of j (caps hold when shapes match or have room).
        for (int m2 : owned[j]) {
          if (s.mats[m2].whole >= s.mats[m].whole) continue;
          const int sh2 = s.mats[m2].shape;
          if (sh2 != sh && (s.count[sh][j] >= s.cap[sh] || s.count[sh2][i] >= s.cap[sh2])) continue;
          consider(m, j, m2);
        }
      }
    }
    if (best_m < 0) continue;
    s.unplace(best_m);
    if (best_m2 >= 0) {
      s.unplace(best_m2);
      s.place(best_m2, i);
    }
    s.place(best_m, best_j);
    return true;
  }
  return false;
}

}  // namespace

bool balance_with_rebatching(const ParamInventory& inv, ChunkPlan& plan,
                             const std::vector<double>& fixed_flops, int ns_iterations,
                             double max_bytes_limit, double max_flops_limit) {
  State s;
  s.g = plan.layout.fsdp;
  std::map<std::pair<int64_t, int64_t>, int> shapes;
  for (size_t ci = 0; ci < plan.chunks.size(); ++ci) {
    const Chunk& c = plan.chunks[ci];
    if (c.kind != Chunk::Kind::muon_batch) continue;
    const int sh = shapes.emplace(std::make_pair(c.rows, c.cols), int(shapes.size())).first->second;
    for (const MatrixRef& ref : c.matrices) {
      Mat m;
      m.ref = ref;
      m.shape = sh;
      m.order = s.mats.size();
      m.whole = 2.0 * double(ref.rows) * double(ref.cols);
      m.flops = ns_flops(ref.rows, ref.cols, ns_iterations);
      m.slice.resize(s.g);
      for (int r = 0; r < s.g; ++r) m.slice[r] = detail::slice_bytes(inv, ref, s.g, r);
      s.mats.push_back(std::move(m));
    }
  }
  if (s.mats.empty()) return false;
  std::vector<int> n_shape(shapes.size(), 0);
  for (const Mat& m : s.mats) ++n_shape[m.shape];
  for (int n : n_shape) s.cap.push_back((n + s.g - 1) / s.g + 1);
  s.count.assign(shapes.size(), std::vector<int>(s.g, 0));
  s.owner.assign(s.mats.size(), -1);
  s.bytes.assign(s.g, 0);
  s.flops = fixed_flops;
  double total_b = 0, total_f = std::accumulate(fixed_flops.begin(), fixed_flops.end(), 0.0);
  for (const Mat& m : s.mats) {
    for (int r = 0; r < s.g; ++r) s.bytes[r] += m.slice[r];
    total_b += m.whole * (1 - 1.0 / s.g);
    total_f += m.flops;
  }
  s.nb = std::max(1.0, total_b / s.g);
  s.nf = std::max(1.0, total_f / s.g);
  lpt(s);
  std::vector<std::vector<int>> owned(s.g);
  for (size_t iter = 0; iter < 20 * s.mats.size() + 100; ++iter) {
    for (auto& o : owned) o.clear();
    for (size_t m = 0; m < s.mats.size(); ++m) owned[s.owner[m]].push_back(int(m));
    if (!improve(s, owned)) break;
  }
  if (max_of(s.bytes) > max_bytes_limit || max_of(s.flops) > max_flops_limit) return false;

  // Batches: the j-th matrix (in model order) each rank owns of a shape.
  std::vector<Chunk> kept;
  for (Chunk& c : plan.chunks) {
    if (c.kind != Chunk::Kind::muon_batch) kept.push_back(std::move(c));
  }
  std::vector<std::vector<std::vector<int>>> per(shapes.size(), std::vector<std::vector<int>>(s.g));
  for (size_t m = 0; m < s.mats.size(); ++m) per[s.mats[m].shape][s.owner[m]].push_back(int(m));
  for (auto& [shape, sh] : shapes) {
    size_t batches = 0;
    for (const auto& list : per[sh]) batches = std::max(batches, list.size());
    for (size_t j = 0; j < batches; ++j) {
      std::vector<std::pair<size_t, int>> members;  // (model order, owner)
      for (int r = 0; r < s.g; ++r) {
        if (j < per[sh][r].size()) members.push_back({size_t(per[sh][r][j]), r});
      }
      std::sort(members.begin(), members.end());
      Chunk c;
      c.kind = Chunk::Kind::muon_batch;
      c.rows = shape.first;
      c.cols = shape.second;
      c.group_size = s.g;
      for (const auto& [m, r] : members) {
        const MatrixRef& ref = s.mats[m].ref;
        c.matrices.push_back(ref);
        c.owners.push_back(r);
        c.params += ref.rows * ref.cols;
        const std::string& name = inv.tensors[ref.tensor].name;
        if (std::find(c.param_names.begin(), c.param_names.end(), name) == c.param_names.end()) {
          c.param_names.push_back(name);
        }
      }
      kept.push_back(std::move(c));
    }
  }
  // Model order again: by each chunk's first tensor, the AdamW group last.
  auto key = [](const Chunk& c) {
    return c.kind == Chunk::Kind::adamw_group ? 1 << 30 : c.matrices.front().tensor;
  };
  std::stable_sort(kept.begin(), kept.end(),
                   [&](const Chunk& a, const Chunk& b) { return key(a) < key(b); });
  plan.chunks = std::move(kept);
  return true;
}

}  // namespace muonplan
