// Owner strategies. `balanced` starts from the round-robin assignment and from an LPT greedy
// one, improves each by local search that moves a matrix to a rank not yet owning one in its
// batch, accepting a move only when neither the max bytes nor the max FLOPs over ranks grows
// and the sum of squared normalized loads falls; then it keeps the better start. Starting from
// round-robin and never raising either maximum guarantees balanced <= round-robin on both.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "muonplan/planner/ns_model.h"
#include "muonplan/planner/owners.h"
#include "placement/top_n.h"

namespace muonplan {
namespace {

using Owners = std::vector<std::vector<int>>;  // per muon_batch chunk (in batch order)

struct Problem {
  const ParamInventory* inv = nullptr;
  int g = 1;
  std::vector<const Chunk*> batches;
  std::vector<double> whole;        // [batch] bytes of one matrix
  std::vector<double> flops;        // [batch] NS FLOPs of one matrix
  std::vector<double> base_bytes;   // [rank] owning nothing
  std::vector<double> fixed_flops;  // [rank] local NS work

  // Bytes of rank r's slice of matrix k of batch b: computed where needed, since a table of
  // them would hold matrices x ranks entries (640 MB for Kimi-K2 on 131072 ranks).
  double slice(size_t b, size_t k, int r) const {
    return detail::slice_bytes(*inv, batches[b]->matrices[k], g, r);
  }
  size_t count(size_t b) const { return batches[b]->matrices.size(); }
};

struct Loads {
  std::vector<double> bytes, flops;
};

Loads evaluate(const Problem& p, const Owners& own) {
  Loads l{p.base_bytes, p.fixed_flops};
  for (size_t b = 0; b < p.batches.size(); ++b) {
    for (size_t k = 0; k < own[b].size(); ++k) {
      const int r = own[b][k];
      l.bytes[r] += p.whole[b] - 2 * p.slice(b, k, r);
      l.flops[r] += p.flops[b];
    }
  }
  return l;
}

// Largest value of v over indices other than i and j.
double max_except(const std::vector<double>& v, const std::vector<int>& top, int i, int j) {
  for (int t : top) {
    if (t != i && t != j) return v[t];
  }
  return 0;
}

std::vector<int> top3(const std::vector<double>& v) {
  return detail::top_n(int(v.size()), 3, [&](int i) { return v[i]; });
}

void local_search(const Problem& p, Owners& own) {
  Loads l = evaluate(p, own);
  const double nb = std::max(1.0, std::accumulate(l.bytes.begin(), l.bytes.end(), 0.0) / p.g);
  const double nf = std::max(1.0, std::accumulate(l.flops.begin(), l.flops.end(), 0.0) / p.g);
  auto sq = [&](double b, double f) { return (b / nb) * (b / nb) + (f / nf) * (f / nf); };
  // Batches each rank owns a matrix in, kept current as moves are made.
  std::vector<std::vector<std::pair<int, int>>> owned(p.g);
  for (size_t b = 0; b < own.size(); ++b) {
    for (size_t k = 0; k < own[b].size(); ++k) owned[own[b][k]].push_back({int(b), int(k)});
  }
  std::vector<char> busy(p.g);
  const size_t max_moves = 8 * (own.size() + 1) * 4;
  for (size_t moves = 0; moves < max_moves; ++moves) {
    const std::vector<int> tb = top3(l.bytes), tf = top3(l.flops);
    const double max_b = l.bytes[tb[0]], max_f = l.flops[tf[0]];
    const std::vector<int> ranks =
        detail::top_n(p.g, 8, [&](int a) { return std::max(l.bytes[a] / nb, l.flops[a] / nf); });
    bool moved = false;
    for (int scan = 0; scan < int(ranks.size()) && !moved; ++scan) {
      const int i = ranks[scan];
      double best_gain = 1e-12;
      int best_j = -1;
      size_t best_idx = 0;
      for (size_t oi = 0; oi < owned[i].size(); ++oi) {
        const auto [b, k] = owned[i][oi];
        std::fill(busy.begin(), busy.end(), 0);
        for (int o : own[b]) busy[o] = 1;
        const double sb_i = p.slice(b, k, i);
        const double new_bi = l.bytes[i] - (p.whole[b] - 2 * sb_i);
        const double new_fi = l.flops[i] - p.flops[b];
        for (int j = 0; j < p.g; ++j) {
          if (busy[j]) continue;
          const double new_bj = l.bytes[j] + p.whole[b] - 2 * p.slice(b, k, j);
          const double new_fj = l.flops[j] + p.flops[b];
          const double mb = std::max({max_except(l.bytes, tb, i, j), new_bi, new_bj});
          const double mf = std::max({max_except(l.flops, tf, i, j), new_fi, new_fj});
          if (mb > max_b * (1 + 1e-12) || mf > max_f * (1 + 1e-12)) continue;
          const double gain = sq(l.bytes[i], l.flops[i]) + sq(l.bytes[j], l.flops[j]) -
                              sq(new_bi, new_fi) - sq(new_bj, new_fj);
          if (gain > best_gain) {
            best_gain = gain;
            best_j = j;
            best_idx = oi;
          }
        }
      }
      if (best_j < 0) continue;
      const auto [b, k] = owned[i][best_idx];
      l.bytes[i] -= p.whole[b] - 2 * p.slice(b, k, i);
      l.flops[i] -= p.flops[b];
      l.bytes[best_j] += p.whole[b] - 2 * p.slice(b, k, best_j);
      l.flops[best_j] += p.flops[b];
      own[b][k] = best_j;
      owned[i].erase(owned[i].begin() + best_idx);
      owned[best_j].push_back({b, k});
      moved = true;
    }
    if (!moved) break;
  }
}

// LPT: heaviest batches first; each matrix goes to the free rank with the lowest resulting
// normalized load.
Owners greedy(const Problem& p) {
  Owners own(p.batches.size());
  std::vector<size_t> order(p.batches.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return p.flops[a] > p.flops[b]; });
  double total_b = std::accumulate(p.base_bytes.begin(), p.base_bytes.end(), 0.0);
  double total_f = std::accumulate(p.fixed_flops.begin(), p.fixed_flops.end(), 0.0);
  for (size_t b = 0; b < p.batches.size(); ++b) {
    total_b += p.whole[b] * p.count(b) * (p.g - 2.0) / std::max(1, p.g);
    total_f += p.flops[b] * p.count(b);
  }
  const double nb = std::max(1.0, total_b / p.g), nf = std::max(1.0, total_f / p.g);
  std::vector<double> bytes = p.base_bytes, flops = p.fixed_flops;
  std::vector<char> busy(p.g);
  for (size_t b : order) {
    std::fill(busy.begin(), busy.end(), 0);
    own[b].resize(p.count(b));
    for (size_t k = 0; k < p.count(b); ++k) {
      int best = -1;
      double best_score = 0;
      for (int r = 0; r < p.g; ++r) {
        if (busy[r]) continue;
        const double nb_r = bytes[r] + p.whole[b] - 2 * p.slice(b, k, r);
        const double score = std::max(nb_r / nb, (flops[r] + p.flops[b]) / nf);
        if (best < 0 || score < best_score) {
          best = r;
          best_score = score;
        }
      }
      own[b][k] = best;
      busy[best] = 1;
      bytes[best] += p.whole[b] - 2 * p.slice(b, k, best);
      flops[best] += p.flops[b];
    }
  }
  return own;
}

Owners round_robin(const Problem& p) {
  Owners own(p.batches.size());
  int next = 0;
  for (size_t b = 0; b < p.batches.size(); ++b) {
    for (size_t k = 0; k < p.count(b); ++k) own[b].push_back((next + int(k)) % p.g);
    next = (next + int(p.count(b))) % p.g;
  }
  return own;
}

// Per group position, the most local matrices any of its replicas holds under `rule`: a
// position stands for every replica group's rank there, so the busiest counts.
std::vector<double> busiest_replica(const LocalCounts& rule, int g, int world) {
  std::vector<double> per(g, 0);
  for (int r = 0; r < world; ++r) per[r % g] = std::max(per[r % g], double(rule.at(r)));
  return per;
}

Problem make_problem(const ParamInventory& inv, const ChunkPlan& plan, int ns_iterations) {
  Problem p;
  p.inv = &inv;
  p.g = plan.layout.fsdp;
  p.base_bytes.assign(p.g, 0);
  p.fixed_flops.assign(p.g, 0);
  // Local chunks that share a placement rule (every expert stack of a model, usually) load
  // ranks alike: one pass over the world per rule, not per chunk.
  std::map<LocalCounts, double> local_flops;
  for (const Chunk& c : plan.chunks) {
    if (c.kind == Chunk::Kind::muon_local) {
      local_flops[c.local] += ns_flops(c.rows, c.cols, ns_iterations);
      continue;
    }
    if (c.kind != Chunk::Kind::muon_batch) continue;
    p.batches.push_back(&c);
    p.whole.push_back(2.0 * c.rows * c.cols);
    p.flops.push_back(ns_flops(c.rows, c.cols, ns_iterations));
    for (const MatrixRef& m : c.matrices)
      detail::for_each_slice(inv, m, p.g, [&](int r, double b) { p.base_bytes[r] += b; });
  }
  for (const auto& [rule, f] : local_flops) {
    const std::vector<double> per = busiest_replica(rule, p.g, plan.world);
    for (int i = 0; i < p.g; ++i) p.fixed_flops[i] += per[i] * f;
  }
  return p;
}

}  // namespace

void assign_owners(const ParamInventory& inv, ChunkPlan& plan, OwnerStrategy strategy,
                   int ns_iterations) {
  const int g = plan.layout.fsdp;
  if (strategy == OwnerStrategy::padded || strategy == OwnerStrategy::restart) {
    for (Chunk& c : plan.chunks) {
      if (c.kind != Chunk::Kind::muon_batch) continue;
      const int n = strategy == OwnerStrategy::padded ? g : int(c.matrices.size());
      c.padding = n - int(c.matrices.size());
      c.owners.resize(n);
      std::iota(c.owners.begin(), c.owners.end(), 0);
    }
    return;
  }
  const Problem p = make_problem(inv, plan, ns_iterations);
  Owners own = round_robin(p);
  if (strategy == OwnerStrategy::balanced && p.g > 1 && !p.batches.empty()) {
    const Loads rr = evaluate(p, own);
    // First choice: owners chosen freely, batches formed after; kept only if it beats
    // round-robin on neither maximum worse.
    if (balance_with_rebatching(inv, plan, p.fixed_flops, ns_iterations, detail::max_of(rr.bytes),
                                detail::max_of(rr.flops))) {
      return;
    }
    // Fallback: the round-robin batches, owners improved by local search.
    local_search(p, own);
    Owners alt = greedy(p);
    local_search(p, alt);
    const Loads a = evaluate(p, alt), b = evaluate(p, own);
    const bool alt_ok = detail::max_of(a.bytes) <= detail::max_of(rr.bytes) &&
                        detail::max_of(a.flops) <= detail::max_of(rr.flops);
    const auto score = [&](const Loads& l) {
      return std::max(detail::max_of(l.bytes) / std::max(1.0, detail::max_of(rr.bytes)),
                      detail::max_of(l.flops) / std::max(1.0, detail::max_of(rr.flops)));
    };
    if (alt_ok && score(a) < score(b)) own = std::move(alt);
  }
  size_t bi = 0;
  for (Chunk& c : plan.chunks) {
    if (c.kind == Chunk::Kind::muon_batch) c.owners = own[bi++];
  }
}

RankLoads compute_loads(const ParamInventory& inv, const ChunkPlan& plan, int ns_iterations) {
  const int g = plan.layout.fsdp;
  // Muon batches load group positions (every replica group alike); slices are visited only
  // where they are not empty, so the cost is the matrices' rows plus the ranks.
  std::vector<double> bytes(g, 0), flops(g, 0);
  std::map<LocalCounts, double> local_flops;
  for (const Chunk& c : plan.chunks) {
    const double f = ns_flops(c.rows, c.cols, ns_iterations);
    if (c.kind == Chunk::Kind::muon_local) {
      local_flops[c.local] += f;
    } else if (c.kind == Chunk::Kind::muon_batch) {
      // sent_r = sum_k slice_r(k) + sum_{k: owner(k) = r} (whole(k) - 2 slice_r(k))
      for (size_t k = 0; k < c.owners.size(); ++k) {
        const MatrixRef& m = c.matrices[std::min(k, c.matrices.size() - 1)];
        detail::for_each_slice(inv, m, g, [&](int r, double b) { bytes[r] += b; });
        const int o = c.owners[k];
        bytes[o] += 2.0 * double(m.rows) * double(m.cols) - 2 * detail::slice_bytes(inv, m, g, o);
        flops[o] += f;
      }
    }
  }
  RankLoads l;
  l.alltoall_bytes.resize(plan.world);
  l.ns_flops.resize(plan.world);
  for (int r = 0; r < plan.world; ++r) {
    l.alltoall_bytes[r] = bytes[r % g];
    l.ns_flops[r] = flops[r % g];
  }
  for (const auto& [rule, f] : local_flops) {
    for (int r = 0; r < plan.world; ++r) l.ns_flops[r] += double(rule.at(r)) * f;
  }
  return l;
}

}  // namespace muonplan
