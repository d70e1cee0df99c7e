// Alternatives by objective: make_plan at each node count (every layout and offload mode
// there), the candidates prime-rl can run, and the best of them by nodes, GPU-seconds, step.
#include "muonplan/alternatives.h"

#include <algorithm>
#include <functional>
#include <set>

#include "muonplan/layout.h"
#include "muonplan/prime_rl_runs.h"
#include "muonplan/trainer_keys.h"

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

bool prime_rl_runs(const Candidate& c, OptimizerKind optimizer) {
  if (!c.evaluated || !c.fits) return false;
  return prime_rl_cannot_run(c.offload, optimizer, parse_layout(c.layout)).empty();
}

std::string line(const std::string& table, bool sft, const std::string& key,
                 const std::string& value) {
  trainer_key(table, key);  // a key of the table every reader and writer shares
  return "[" + prime_rl_table(table, sft) + "] " + key + " = " + value;
}

}  // namespace

std::vector<std::string> keys_to_change(const TrainerConfig& tc, const ModelSpec& spec,
                                        const Plan& written, const Candidate& c) {
  std::vector<std::string> out;
  const bool sft = tc.sft;
  const int gpn = written.gpus_per_node, world = c.nodes * gpn;
  // A multi-node file stays one (an RL single node shares its GPUs with inference): one node
  // is num_train_nodes = 1 there.
  if (c.nodes != written.options.nodes) {
    if (tc.single_node) out.push_back(line("deployment", sft, "type", "\"multi_node\""));
    out.push_back(line("deployment", sft, "num_train_nodes", std::to_string(c.nodes)));
    if (tc.single_node)
      out.push_back(line("deployment", sft, "gpus_per_node", std::to_string(gpn)));
  }
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
  std::vector<Candidate> runs;
  for (int n : a.node_counts) {
    PlanRequest r = in.request;
    r.auto_nodes = r.auto_offload = r.search_ep = r.search_cp = true;
    r.node_counts = {n};
    r.options.layout = Layout{};
    r.options.gpus_per_node = written.gpus_per_node;
    try {
      for (const Candidate& c : make_plan(spec, topo, r).candidates) {
        if (prime_rl_runs(c, written.options.optimizer)) runs.push_back(c);
      }
    } catch (const InputError&) {
      continue;  // no layout takes this world (the workload's rows do not divide)
    }
  }
  if (runs.empty()) return a;
  using Key = std::pair<double, double>;
  const std::pair<const char*, std::function<Key(const Candidate&)>> objectives[] = {
      {"fewest nodes that fit", [](const Candidate& c) { return Key(c.nodes, c.gpu_seconds); }},
      {"fewest GPU-seconds per step",
       [](const Candidate& c) { return Key(c.gpu_seconds, c.nodes); }},
      {"shortest step", [](const Candidate& c) { return Key(c.step_s, c.nodes); }}};
  for (const auto& objective : objectives) {
    // Not a structured binding: clang before 16 cannot capture one in a lambda (the fuzz build).
    const auto& key = objective.second;
    const Candidate& best = *std::min_element(
        runs.begin(), runs.end(), [&](const auto& x, const auto& y) { return key(x) < key(y); });
    a.alternatives.push_back(
        {objective.first, best, keys_to_change(*in.trainer, spec, written, best)});
  }
  return a;
}

}  // namespace muonplan
