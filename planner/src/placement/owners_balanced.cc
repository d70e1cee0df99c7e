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

#include "muonplan/planner/ns_model.h"
#include "muonplan/planner/owners.h"
#include "placement/top_n.h"

namespace muonplan {
namespace {

struct Mat {
  MatrixRef ref;
  int shape = 0;
  size_t order = 0;  // position in the round-robin chunk list: model order
  double whole = 0, flops = 0;
  Range holders;  // the positions with a slice of it (detail::holders)
};

struct State {
  const ParamInventory* inv = nullptr;
  int g = 1;
  std::vector<Mat> mats;
  std::vector<int> cap;                 // per shape
  std::vector<std::vector<int>> count;  // [shape][rank]
  std::vector<int> owner;               // per mat
  std::vector<double> bytes, flops;     // per rank
  double nb = 1, nf = 1;
  // A rank owning no matrix ("passive") carries its base load, which never changes. Passive
  // ranks with equal base loads are interchangeable to the search, which therefore looks at
  // one of each class (the lowest index, as a scan in rank order would pick) besides the
  // ranks owning matrices: a step costs the matrices plus the classes, not the ranks.
  std::vector<double> base_bytes, base_flops;  // per rank
  std::vector<std::vector<int>> owned;         // per rank, ascending
  std::vector<int> active;                     // ranks owning at least one matrix, any order
  std::vector<int> active_at;                  // per rank: its index in `active`, or -1
  std::vector<std::vector<int>> classes;       // passive-load classes, ranks ascending
  // Ranks by bytes, by flops, by normalized load: descending, lower index first.
  std::vector<int> by_bytes, by_flops, by_load;

  // Computed where needed: a per-rank table per matrix would hold matrices x ranks entries.
  // Outside its holders a matrix has no slice: 0, without slice_bytes' division.
  double slice(int m, int r) const {
    const Range& h = mats[m].holders;
    return r < h.begin || r >= h.end ? 0.0 : detail::slice_bytes(*inv, mats[m].ref, g, r);
  }
  double delta_bytes(int m, int r) const { return mats[m].whole - 2 * slice(m, r); }
  double sq(double b, double f) const { return (b / nb) * (b / nb) + (f / nf) * (f / nf); }
  double load(int r) const { return std::max(bytes[r] / nb, flops[r] / nf); }
  void place(int m, int r) {
    owner[m] = r;
    ++count[mats[m].shape][r];
    bytes[r] += delta_bytes(m, r);
    flops[r] += mats[m].flops;
    if (owned[r].empty()) {
      active_at[r] = int(active.size());
      active.push_back(r);
    }
    owned[r].insert(std::lower_bound(owned[r].begin(), owned[r].end(), m), m);
  }
  void unplace(int m) {
    const int r = owner[m];
    --count[mats[m].shape][r];
    bytes[r] -= delta_bytes(m, r);
    flops[r] -= mats[m].flops;
    owner[m] = -1;
    owned[r].erase(std::find(owned[r].begin(), owned[r].end(), m));
    if (owned[r].empty()) {
      // Exactly its base again (no rounding left over), so it rejoins its class.
      active_at[active.back()] = active_at[r];
      active[active_at[r]] = active.back();
      active.pop_back();
      active_at[r] = -1;
      bytes[r] = base_bytes[r];
      flops[r] = base_flops[r];
    }
  }
};

// Maximum of v with entries i and j replaced by vi and vj, from v's three largest entries
// `top`: in O(1), where a scan of v would make every candidate move cost O(ranks).
double max_with(const std::vector<double>& v, const std::vector<int>& top, int i, double vi, int j,
                double vj) {
  double m = std::max(vi, vj);
  for (int t : top) {
    if (t != i && t != j) return std::max(m, v[t]);
  }
  return m;
}

// The n ranks with the largest key, lower index first among equals, as a scan of every rank
// would give them: active ranks all, passive ones in their static order (their loads do not
// change), of which no more than n can make it.
template <class Key>
std::vector<int> top_ranks(const State& s, size_t n, const std::vector<int>& order, Key key) {
  std::vector<int> cand = s.active;
  size_t passive = 0;
  for (size_t k = 0; k < order.size() && passive < n; ++k) {
    if (s.owned[order[k]].empty()) {
      cand.push_back(order[k]);
      ++passive;
    }
  }
  n = std::min(n, cand.size());
  std::partial_sort(cand.begin(), cand.begin() + n, cand.end(), [&](int a, int b) {
    const double ka = key(a), kb = key(b);
    return ka != kb ? ka > kb : a < b;
  });
  cand.resize(n);
  return cand;
}

// Ranks that could take matrix m from rank i (-1: none), in no order: every active rank, the first
// and last holder of a slice of m (partial slices), and of each passive class the first member in
// each region where m's slice is the same for all (past the holders: none; between the first and
// last holder: full): the others would score exactly as it does and lose the tie to it.
std::vector<int> targets(const State& s, int m, int i) {
  const Range h = detail::holders(*s.inv, s.mats[m].ref, s.g);
  std::vector<int> out = s.active;
  for (int64_t r : {h.begin, h.end - 1}) {
    if (h.end > h.begin && s.owned[r].empty() && (out.empty() || out.back() != r))
      out.push_back(int(r));
  }
  // The first passive member of cls in [lo, hi).
  auto first_passive = [&](const std::vector<int>& cls, int64_t lo, int64_t hi) {
    for (auto it = std::lower_bound(cls.begin(), cls.end(), int(lo)); it != cls.end() && *it < hi;
         ++it) {
      if (s.owned[*it].empty()) return *it;
    }
    return -1;
  };
  for (const std::vector<int>& cls : s.classes) {
    for (const auto& [lo, hi] :
         {std::pair<int64_t, int64_t>{0, h.begin}, {h.begin + 1, h.end - 1}, {h.end, s.g}}) {
      if (lo >= hi) continue;
      const int r = first_passive(cls, lo, hi);
      if (r >= 0) out.push_back(r);
    }
  }
  out.erase(std::remove(out.begin(), out.end(), i), out.end());
  return out;
}

// LPT: largest matrices first, each to the rank whose normalized max(bytes, flops) grows least.
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
    for (int r : targets(s, m, -1)) {
      if (s.count[s.mats[m].shape][r] >= s.cap[s.mats[m].shape]) continue;
      const double b = s.bytes[r] + s.delta_bytes(m, r), f = s.flops[r] + s.mats[m].flops;
      const double score = std::max(b / s.nb, f / s.nf);
      if (best < 0 || score < best_score ||
          (score == best_score && (b < best_bytes || (b == best_bytes && r < best)))) {
        best = r;
        best_score = score;
        best_bytes = b;
      }
    }
    s.place(m, best);
  }
}

// One improving move or swap from a heavily loaded rank; false when none is found.
bool improve(State& s) {
  const std::vector<int> tb = top_ranks(s, 3, s.by_bytes, [&](int r) { return s.bytes[r]; });
  const std::vector<int> tf = top_ranks(s, 3, s.by_flops, [&](int r) { return s.flops[r]; });
  const double max_b = s.bytes[tb[0]], max_f = s.flops[tf[0]];
  const std::vector<int> ranks = top_ranks(s, 4, s.by_load, [&](int r) { return s.load(r); });
  for (int i : ranks) {
    double best_gain = 1e-12;
    int best_m = -1, best_j = -1, best_m2 = -1;
    const double sq_i = s.sq(s.bytes[i], s.flops[i]);
    // Consider giving m to j and taking m2 (-1: nothing) back; keep it if it is the best so far.
    // dmi, dmj: delta_bytes(m, i) and (m, j), worked out once for all the moves and swaps that
    // use them (the same expressions, so the same values).
    auto consider = [&](int m, int j, int m2, double dmi, double dmj) {
      const double take_b = m2 >= 0 ? s.delta_bytes(m2, i) : 0,
                   take_f = m2 >= 0 ? s.mats[m2].flops : 0;
      const double give_b = m2 >= 0 ? s.delta_bytes(m2, j) : 0;
      const double bi = s.bytes[i] - dmi + take_b;
      const double fi = s.flops[i] - s.mats[m].flops + take_f;
      const double bj = s.bytes[j] + dmj - give_b;
      const double fj = s.flops[j] + s.mats[m].flops - take_f;
      if (max_with(s.bytes, tb, i, bi, j, bj) > max_b ||
          max_with(s.flops, tf, i, fi, j, fj) > max_f)
        return;
      const double gain = sq_i + s.sq(s.bytes[j], s.flops[j]) - s.sq(bi, fi) - s.sq(bj, fj);
      // Ties go to the first candidate in rank order (then a move before swaps, smaller m2
      // first), as a scan of every rank would find them.
      if (gain > best_gain || (gain == best_gain && m == best_m &&
                               std::make_pair(j, m2) < std::make_pair(best_j, best_m2))) {
        best_gain = gain;
        best_m = m;
        best_j = j;
        best_m2 = m2;
      }
    };
    for (int m : s.owned[i]) {
      const int sh = s.mats[m].shape;
      const double dmi = s.delta_bytes(m, i);
      for (int j : targets(s, m, i)) {
        const double dmj = s.delta_bytes(m, j);
        if (s.count[sh][j] < s.cap[sh]) consider(m, j, -1, dmi, dmj);  // move m to j
        // Swap m with a smaller matrix m2 of j (caps hold when shapes match or have room).
        for (int m2 : s.owned[j]) {
          if (s.mats[m2].whole >= s.mats[m].whole) continue;
          const int sh2 = s.mats[m2].shape;
          if (sh2 != sh && (s.count[sh][j] >= s.cap[sh] || s.count[sh2][i] >= s.cap[sh2])) continue;
          consider(m, j, m2, dmi, dmj);
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

// Base loads, passive classes and static orders, once the base loads and norms are known.
void index_ranks(State& s) {
  s.base_bytes = s.bytes;
  s.base_flops = s.flops;
  s.owned.assign(s.g, {});
  s.active_at.assign(s.g, -1);
  std::vector<int> ranks(s.g);
  std::iota(ranks.begin(), ranks.end(), 0);
  std::vector<int> by_base = ranks;
  std::sort(by_base.begin(), by_base.end(), [&](int a, int b) {
    return std::tie(s.bytes[a], s.flops[a], a) < std::tie(s.bytes[b], s.flops[b], b);
  });
  for (size_t k = 0; k < by_base.size(); ++k) {
    const int r = by_base[k];
    if (k == 0 || s.bytes[r] != s.bytes[by_base[k - 1]] || s.flops[r] != s.flops[by_base[k - 1]])
      s.classes.emplace_back();
    s.classes.back().push_back(r);
  }
  auto order = [&](auto key) {
    std::vector<int> o = ranks;
    std::sort(o.begin(), o.end(), [&](int a, int b) {
      const double ka = key(a), kb = key(b);
      return ka != kb ? ka > kb : a < b;
    });
    return o;
  };
  s.by_bytes = order([&](int r) { return s.bytes[r]; });
  s.by_flops = order([&](int r) { return s.flops[r]; });
  s.by_load = order([&](int r) { return s.load(r); });
}

// (rows, cols) -> the index of that shape.
using ShapeIds = std::map<std::pair<int64_t, int64_t>, int>;

// Each muon_batch matrix of the plan into s.mats, in model order, with its shape's index:
// matrices of one shape may share a batch.
ShapeIds collect_matrices(const ChunkPlan& plan, int ns_iterations, State& s) {
  ShapeIds shapes;
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
      m.holders = detail::holders(*s.inv, ref, s.g);
      s.mats.push_back(std::move(m));
    }
  }
  return shapes;
}

// No matrix owned yet: each rank's bytes (its slices) and FLOPs (the fixed ones), the caps per
// shape, and the mean loads the balance is measured against.
void start_loads(State& s, const ParamInventory& inv, const std::vector<double>& fixed_flops,
                 size_t n_shapes) {
  std::vector<int> n_shape(n_shapes, 0);
  for (const Mat& m : s.mats) ++n_shape[m.shape];
  for (int n : n_shape) s.cap.push_back((n + s.g - 1) / s.g + 1);
  s.count.assign(n_shapes, std::vector<int>(s.g, 0));
  s.owner.assign(s.mats.size(), -1);
  s.bytes.assign(s.g, 0);
  s.flops = fixed_flops;
  double total_b = 0, total_f = std::accumulate(fixed_flops.begin(), fixed_flops.end(), 0.0);
  for (const Mat& m : s.mats) {
    detail::for_each_slice(inv, m.ref, s.g, [&](int r, double b) { s.bytes[r] += b; });
    total_b += m.whole * (1 - 1.0 / s.g);
    total_f += m.flops;
  }
  s.nb = std::max(1.0, total_b / s.g);
  s.nf = std::max(1.0, total_f / s.g);
}

// The plan's batches rebuilt from the owners chosen: the chunks other than batches kept, then
// put back in model order.
void rebatch(const ParamInventory& inv, ChunkPlan& plan, const State& s, const ShapeIds& shapes) {
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
}

}  // namespace

bool balance_with_rebatching(const ParamInventory& inv, ChunkPlan& plan,
                             const std::vector<double>& fixed_flops, int ns_iterations,
                             double max_bytes_limit, double max_flops_limit) {
  State s;
  s.inv = &inv;
  s.g = plan.layout.fsdp;
  const ShapeIds shapes = collect_matrices(plan, ns_iterations, s);
  if (s.mats.empty()) return false;
  start_loads(s, inv, fixed_flops, shapes.size());
  index_ranks(s);
  lpt(s);
  for (size_t iter = 0; iter < 20 * s.mats.size() + 100; ++iter) {
    if (!improve(s)) break;
  }
  if (detail::max_of(s.bytes) > max_bytes_limit || detail::max_of(s.flops) > max_flops_limit)
    return false;

  rebatch(inv, plan, s, shapes);
  return true;
}

}  // namespace muonplan
