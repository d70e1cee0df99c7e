// Alternatives by objective: make_plan at each node count (every layout and offload mode
// there), the candidates prime-rl can run, and the best of them by nodes, GPU-seconds, step.
#include "muonplan/planner/alternatives.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>
#include <set>

#include "muonplan/planner/layout.h"
#include "muonplan/planner/prime_rl_runs.h"
#include "muonplan/planner/trainer_keys.h"

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

// Whether prime-rl takes candidate `c`'s layout and offload mode with `optimizer` (its fit is
// decided apart, fit_of below).
bool prime_rl_takes(const Candidate& c, OptimizerKind optimizer) {
  if (!c.evaluated) return false;
  return prime_rl_cannot_run(c.offload, optimizer, parse_layout(c.layout)).empty();
}

std::string line(const std::string& table, bool sft, const std::string& key,
                 const std::string& value) {
  trainer_key(table, key);  // a key of the table every reader and writer shares
  return "[" + prime_rl_table(table, sft) + "] " + key + " = " + value;
}

// Where the candidate's world differs from the file's: a one-node file's GPUs in that node, a
// multi-node file's nodes (one node is num_train_nodes = 1 there: an RL single node shares its
// GPUs with inference), or a trainer file's torchrun flags.
void world_keys(const TrainerConfig& tc, const Plan& written, const Candidate& c, int gpn,
                std::vector<std::string>& out) {
  const bool sft = tc.top_level();
  if (c.nodes == written.options.nodes && gpn == written.gpus_per_node) return;
  if (tc.standalone) {
    out.push_back("torchrun --nnodes " + std::to_string(c.nodes) + " --nproc-per-node " +
                  std::to_string(gpn) + " (the world is not in a trainer file)");
    return;
  }
  if (tc.single_node && c.nodes == 1) {
    out.push_back(line("deployment", sft, "num_train_gpus", std::to_string(gpn)));
    return;
  }
  if (tc.world_table != "deployment") {  // a launcher-era file: its own keys, no [deployment]
    const std::string at = tc.world_table.empty() ? "(top level) " : "[slurm] ";
    trainer_key(tc.world_table, "num_train_nodes");
    out.push_back(at + "num_train_nodes = " + std::to_string(c.nodes));
    return;
  }
  if (tc.single_node) out.push_back(line("deployment", sft, "type", "\"multi_node\""));
  out.push_back(line("deployment", sft, "num_train_nodes", std::to_string(c.nodes)));
  if (tc.single_node) out.push_back(line("deployment", sft, "gpus_per_node", std::to_string(gpn)));
}

}  // namespace

std::vector<std::string> keys_to_change(const TrainerConfig& tc, const ModelSpec& spec,
                                        const Plan& written, const Candidate& c,
                                        int gpus_per_node) {
  std::vector<std::string> out;
  const bool sft = tc.top_level();
  const int gpn = gpus_per_node > 0 ? gpus_per_node : written.gpus_per_node;
  const int world = c.nodes * gpn;
  world_keys(tc, written, c, gpn, out);
  const Layout l = parse_layout(c.layout);
  const int dpr = world / l.fsdp;
  if (dpr != written.world / written.options.layout.fsdp) {
    if (tc.fsdp_group_key) {
      out.push_back(line("deployment", sft, "nodes_per_fsdp_group", std::to_string(c.nodes / dpr)));
    } else {
      out.push_back(line("model", sft, "dp_replicate", std::to_string(dpr)));
    }
  } else if (tc.fsdp_group_key && c.nodes != written.options.nodes) {
    out.push_back(line("deployment", sft, "nodes_per_fsdp_group", std::to_string(c.nodes / dpr)));
  }
  if (l.cp != written.options.layout.cp)
    out.push_back(line("model", sft, "cp", std::to_string(l.cp)));
  const int ep_now = tc.ep > 0 ? tc.ep : tc.resolved_ep(spec, world);
  if (l.ep != ep_now) out.push_back(line("model", sft, "ep", std::to_string(l.ep)));
  if (c.offload != written.options.offload) {
    // The two keys' values under each mode (optim_cpu_offload defaults to true, so it is
    // written whenever it must be false); only those that change are listed.
    auto optim = [](OffloadMode m) { return m == OffloadMode::optimizer; };
    auto full = [](OffloadMode m) { return m == OffloadMode::full; };
    const FileValue* written_by = tc.value("offload");
    const bool by_fsdp =
        written_by && written_by->shown.find("fsdp_cpu_offload") != std::string::npos;
    if (optim(c.offload) != optim(written.options.offload))
      out.push_back(line("model", sft, "optim_cpu_offload", optim(c.offload) ? "true" : "false"));
    if (by_fsdp) {
      out.push_back(line("model", sft, "fsdp_cpu_offload", "false"));
      if (full(c.offload)) out.push_back(line("model", sft, "full_offload", "true"));
    } else if (full(c.offload) != full(written.options.offload)) {
      out.push_back(line("model", sft, "full_offload", full(c.offload) ? "true" : "false"));
    }
  }
  return out;
}

TrainerAnswer trainer_answer(const ModelSpec& spec, const Topology& topo, const PlanInputs& in,
                             const Plan& written) {
  TrainerAnswer a;
  for (const Candidate& c : written.candidates) {
    if (c.evaluated && c.nodes == written.options.nodes && c.offload == written.options.offload &&
        c.layout == to_string(written.options.layout))
      a.as_written = c;
  }
  a.max_nodes = in.request.max_nodes > 0 ? in.request.max_nodes : topo.max_nodes;
  a.node_counts = sweep_counts(written.options.nodes, a.max_nodes);
  std::vector<std::pair<int, int>> worlds;  // (nodes, GPUs per node)
  for (int n : a.node_counts) worlds.push_back({n, written.gpus_per_node});
  // A one-node file with GPUs to spare tries more of them in that node first.
  const TrainerConfig& tc = *in.trainer;
  if (tc.single_node && written.options.nodes == 1) {
    for (int g = written.gpus_per_node + 1; g <= tc.node_gpus - tc.infer_gpus; ++g)
      worlds.push_back({1, g});
  }
  // The sweep predicts every candidate without the allocator replay (its times, traffic and
  // host figures are exact that way; cost_model.h), and a candidate's fit is decided only when
  // an objective reaches it in its order (fit_of): each objective's best is the first in its
  // order that fits, as a full sweep would choose it, at a few dozen replays instead of one per
  // candidate (~530 for examples/prime-rl/qwen3-30b-a3b-rl.toml).
  struct Run {
    Candidate lazy;  // GPU figures and `fits` not read
    int gpus_per_node = 0;
    std::optional<Candidate> full;  // the candidate predicted whole, once its fit is asked
  };
  std::vector<Run> runs;
  for (auto [n, gpn] : worlds) {
    PlanRequest r = in.request;
    r.auto_nodes = r.auto_offload = r.search_ep = r.search_cp = true;
    r.node_counts = {n};
    r.options.layout = Layout{};
    r.options.gpus_per_node = gpn;
    r.parts = PredictParts::without_allocator_replay;
    try {
      for (const Candidate& c : make_plan(spec, topo, r).candidates) {
        if (prime_rl_takes(c, written.options.optimizer)) runs.push_back({c, gpn, {}});
      }
    } catch (const InputError&) {
      continue;  // no layout takes this world (the workload's rows do not divide)
    }
  }
  // The one candidate planned whole: its world, layout and mode fixed.
  auto fit_of = [&](Run& run) -> const Candidate& {
    if (!run.full) {
      PlanRequest r = in.request;
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
      a.alternatives.push_back({objective.first, c, runs[i].gpus_per_node,
                                keys_to_change(tc, spec, written, c, runs[i].gpus_per_node)});
      break;
    }
  }
  return a;
}

}  // namespace muonplan
