// Alternatives by objective: make_plan at each node count (every layout and offload mode
// there), the candidates the target runtime can run, and the best of them by nodes,
// GPU-seconds, step.
#include "muonplan/planner/alternatives.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>
#include <set>

#include "muonplan/planner/layout.h"

namespace muonplan {
namespace {

// The node counts swept: every count up to 16, then the powers of two and their 1.5x (24,
// 48, ...) up to the bound, plus the written count's 2x and 4x: the question "what do 4x the
// nodes buy" without a plan per node count up to 64.
std::vector<int> sweep_counts(int written, int max_nodes) {
  std::set<int> n;
  for (int i = 1; i <= std::min(16, max_nodes); ++i) n.insert(i);
  for (int p = 16; p <= max_nodes; p *= 2) {
    n.insert(p);
    if (p + p / 2 <= max_nodes) n.insert(p + p / 2);
  }
  for (int m : {1, 2, 4}) {
    if (written * m <= max_nodes) n.insert(written * m);
  }
  return {n.begin(), n.end()};
}

}  // namespace

Alternatives best_alternatives(const ModelSpec& spec, const Topology& topo,
                               const PlanRequest& request, const Plan& written,
                               const RuntimeRules& rules, int one_node_gpus) {
  Alternatives a;
  for (const Candidate& c : written.candidates) {
    if (c.evaluated && c.nodes == written.options.nodes && c.offload == written.options.offload &&
        c.layout == to_string(written.options.layout))
      a.as_written = c;
  }
  a.max_nodes = request.max_nodes > 0 ? request.max_nodes : topo.max_nodes;
  a.node_counts = sweep_counts(written.options.nodes, a.max_nodes);
  std::vector<std::pair<int, int>> worlds;  // (nodes, GPUs per node)
  for (int n : a.node_counts) worlds.push_back({n, written.gpus_per_node});
  // A one-node run with GPUs to spare tries more of them in that node first.
  if (written.options.nodes == 1) {
    for (int g = written.gpus_per_node + 1; g <= one_node_gpus; ++g) worlds.push_back({1, g});
  }
  // The sweep predicts every candidate without the allocator replay (its times, traffic and
  // host figures are exact that way; cost_model.h), and a candidate's fit is decided only when
  // an objective reaches it in its order (fit_of): each objective's best is the first in its
  // order that fits, as a full sweep would choose it, at a few dozen replays instead of one per
  // candidate (~530 for the Qwen3-30B-A3B RL example of examples/).
  struct Run {
    Candidate lazy;  // GPU figures and `fits` not read
    int gpus_per_node = 0;
    std::optional<Candidate> full;  // the candidate predicted whole, once its fit is asked
  };
  std::vector<Run> runs;
  for (auto [n, gpn] : worlds) {
    PlanRequest r = request;
    r.auto_nodes = r.auto_offload = r.search_ep = r.search_cp = true;
    r.node_counts = {n};
    r.options.layout = Layout{};
    r.options.gpus_per_node = gpn;
    r.parts = PredictParts::without_allocator_replay;
    try {
      for (const Candidate& c : make_plan(spec, topo, r).candidates) {
        if (rules.takes(c, written.options.optimizer)) runs.push_back({c, gpn, {}});
      }
    } catch (const InputError&) {
      continue;  // no layout takes this world (the workload's rows do not divide)
    }
  }
  // The one candidate planned whole: its world, layout and mode fixed.
  auto fit_of = [&](Run& run) -> const Candidate& {
    if (!run.full) {
      PlanRequest r = request;
      r.auto_nodes = true;
      r.auto_offload = r.search_ep = r.search_cp = false;
      r.node_counts = {run.lazy.nodes};
      r.options.layout = parse_layout(run.lazy.layout);
      r.options.offload = run.lazy.offload;
      r.options.gpus_per_node = run.gpus_per_node;
      const Plan one = make_plan(spec, topo, r);
      run.full = one.candidates.at(0);
    }
    return *run.full;
  };
  using Key = std::pair<double, double>;
  const std::pair<const char*, std::function<Key(const Candidate&)>> objectives[] = {
      {"fewest nodes that fit", [](const Candidate& c) { return Key(c.nodes, c.gpu_seconds); }},
      {"fewest GPU-seconds per step",
       [](const Candidate& c) { return Key(c.gpu_seconds, c.nodes); }},
      {"shortest step", [](const Candidate& c) { return Key(c.step_s, c.nodes); }}};
  std::vector<size_t> order(runs.size());
  for (const auto& objective : objectives) {
    // Not a structured binding: clang before 16 cannot capture one in a lambda (the fuzz build).
    const auto& key = objective.second;
    std::iota(order.begin(), order.end(), size_t{0});
    // Stable: among equal keys the sweep's order, as min_element over the fits chose.
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t x, size_t y) { return key(runs[x].lazy) < key(runs[y].lazy); });
    for (size_t i : order) {  // none, when no candidate fits
      const Candidate& c = fit_of(runs[i]);
      if (!c.fits) continue;
      a.alternatives.push_back({objective.first, c, runs[i].gpus_per_node, {}});
      break;
    }
  }
  return a;
}

}  // namespace muonplan
