// Node-count and offload-mode search: the fewest nodes on which some mode fits, then the mode
// with the fewest GPU-seconds per step.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "cost/candidate_context.h"
#include "cost/workload_cost.h"
#include "muonplan/base/error.h"
#include "muonplan/base/units.h"
#include "muonplan/planfile/fit_scope.h"
#include "muonplan/planner/lora.h"
#include "muonplan/planner/ns_model.h"
#include "muonplan/planner/plan.h"
#include "muonplan/planner/runtime_rules.h"
#include "muonplan/planner/topology_nodes.h"
#include "muonplan/planner/workload.h"
#include "plan/search_floor.h"

namespace muonplan {
namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// How far a prediction is from fitting: the larger of its GPU and host use over the limits.
double pressure(const Prediction& p) {
  return std::max(p.gpu_peak_bytes() / p.gpu_limit_bytes, p.host_bytes() / p.host_limit_bytes);
}

// The tensors the plan trains under `o`: all of the model's, or with LoRA its adapters (the
// base weights frozen, lora.h).
ParamInventory planned_inventory(const ModelSpec& spec, const PlanOptions& o) {
  ParamInventory inv = build_inventory(spec);
  if (o.optimizer != OptimizerKind::muon) {
    for (ParamTensor& t : inv.tensors) t.rule = UpdateRule::adamw;
  }
  apply_lora(inv, o.lora);
  return inv;
}

// The layouts a world of `world` ranks is tried with: the asked one, with the searched
// dimensions enumerated. Ones that do not divide the world are refused by resolve_layout and
// listed as not evaluated.
std::vector<Layout> layouts_to_try(const PlanRequest& req, const ModelSpec& spec, int world) {
  const Layout& asked = req.options.layout;
  std::vector<int> eps = {asked.ep}, cps = {asked.cp};
  // The experts are sharded inside the shard group (shards.h): ep divides fsdp.
  const int fsdp = asked.fsdp > 0 ? asked.fsdp : world;
  if (req.search_ep && spec.moe.num_experts > 0) {
    eps.clear();
    for (int d = 1; d <= fsdp && d <= spec.moe.num_experts; ++d) {
      if (spec.moe.num_experts % d == 0 && fsdp % d == 0 && world % d == 0) eps.push_back(d);
    }
  }
  const std::optional<Workload>& w = req.options.workload;
  if (req.search_cp && w) {
    cps.clear();
    for (int c = 1; c <= 8; c *= 2) {
      if (w->seq_len % c == 0 && fsdp % c == 0) cps.push_back(c);
    }
  }
  std::vector<Layout> out;
  for (int cp : cps) {
    if (req.ep_by_runtime && !req.search_ep && req.rules) {
      out.push_back(Layout{asked.fsdp, cp, req.rules->default_ep(spec, fsdp, cp)});
      continue;
    }
    for (int ep : eps) out.push_back(Layout{asked.fsdp, cp, ep});
  }
  return out;
}

// What the plan file states so that the executor re-derives nothing: each tensor's shard rule,
// the batches in flight and each Muon chunk's predicted NS time.
void resolve_for_executor(Plan& plan) {
  const PlanOptions& o = plan.options;
  plan.shards.clear();
  for (const ParamTensor& t : plan.inventory.tensors)
    plan.shards.push_back(shard_rule(t, o.layout, plan.world));
  plan.batches_in_flight = o.batches_in_flight();
  for (Chunk& c : plan.chunks.chunks) {
    if (c.kind == Chunk::Kind::adamw_group) continue;
    // A batch's owner orthogonalizes one matrix; a local chunk's busiest rank all of its own.
    const int64_t count = c.kind == Chunk::Kind::muon_batch ? 1 : c.local.max();
    c.predicted_ns_s = ns_cost(plan.topology, count, c.rows, c.cols, o.schedule).total_s;
  }
}

// The limits and sizes make_plan refuses before it evaluates anything: ones that leave no
// room for any tensor are input errors, not "does not fit" answers.
void check_request(const Topology& topo, const PlanRequest& req, int gpn) {
  if (gpn <= 0) throw InputError({}, "--gpus-per-node", "must be positive");
  const PlanOptions& in = req.options;
  if (in.gpu_memory_gib < 0 || in.host_ram_gib < 0) {
    throw InputError({}, in.gpu_memory_gib < 0 ? "--gpu-memory-gib" : "--host-ram-gib",
                     "must be positive");
  }
  if (in.gpu_memory_gib > 0 && in.gpu_memory_gib <= topo.overheads.cuda_context_gib) {
    throw InputError({}, "--gpu-memory-gib",
                     fmt("%g GiB", in.gpu_memory_gib) +
                         " is not above the fixed per-GPU overhead (" +
                         fmt("%g GiB", topo.overheads.cuda_context_gib) + "): nothing can fit");
  }
  const double node_overhead = topo.overheads.host_per_process_gib * gpn;
  if (in.host_ram_gib > 0 && in.host_ram_gib <= node_overhead) {
    throw InputError({}, "--host-ram-gib",
                     fmt("%g GiB", in.host_ram_gib) +
                         " is not above the per-node process overhead (" +
                         fmt("%g GiB", node_overhead) + "): nothing can fit");
  }
  if (req.max_nodes < 0) throw InputError({}, "--max-nodes", "must be positive");
  // Above the topology's max_nodes a search would plan clusters the topology says do not exist
  // (--max-nodes 100 once chose 83 nodes of a 64-node h200-ib): refused as --nodes is.
  if (req.max_nodes > 0) check_node_count(req.max_nodes, topo, "--max-nodes");
  // Per-rank tables grow with the world: bound it before anything is allocated.
  if (gpn > kMaxGpusPerNode) {
    throw InputError({}, "--gpus-per-node",
                     "more than muonplan plans for (" + std::to_string(kMaxGpusPerNode) + ")");
  }
  if (!req.auto_nodes && int64_t(req.options.nodes) * gpn > kMaxWorldRanks) {
    throw InputError({}, "--nodes",
                     "a world of " + std::to_string(int64_t(req.options.nodes) * gpn) +
                         " ranks is more than muonplan plans for (" +
                         std::to_string(kMaxWorldRanks) + ")");
  }
  // (0 and below: node_counts_to_try's message, the flag's.)
  if (!req.auto_nodes && req.options.nodes > 0)
    check_node_count(req.options.nodes, topo, "--nodes");
}

// The node counts to try, in order: the listed ones in range, 1..max, or the one asked for.
std::vector<int> node_counts_to_try(const PlanRequest& req, int max_nodes, int gpn) {
  std::vector<int> counts;
  if (req.auto_nodes && !req.node_counts.empty()) {
    for (int n : req.node_counts) {
      if (n >= 1 && n <= max_nodes && int64_t(n) * gpn <= kMaxWorldRanks) counts.push_back(n);
    }
    if (counts.empty()) {
      throw InputError({}, "--nodes",
                       "no node count between 1 and " + std::to_string(max_nodes) +
                           " with a world of at most " + std::to_string(kMaxWorldRanks) + " ranks");
    }
  } else if (req.auto_nodes) {
    for (int n = 1; n <= max_nodes && int64_t(n) * gpn <= kMaxWorldRanks; ++n) counts.push_back(n);
  } else {
    if (req.options.nodes <= 0) {
      throw InputError({}, "--nodes", bad_nodes_message(std::to_string(req.options.nodes)));
    }
    counts.push_back(req.options.nodes);
  }
  return counts;
}

// Why the request's target runtime cannot run this mode with this optimizer on this layout;
// "" when it can or when the request names no runtime.
std::string runtime_refuses(const PlanRequest& req, OffloadMode m, OptimizerKind k,
                            const Layout& l) {
  return req.rules ? req.rules->cannot_run(m, k, l) : "";
}

// The search's running state: every candidate so far (in `best.candidates`) and the best one.
struct Search {
  Search(const ModelSpec& s, const Topology& t, const PlanRequest& r, const ParamInventory& i,
         const std::vector<OffloadMode>& m)
      : spec(s), topo(t), req(r), inv(i), modes(m) {}
  const ModelSpec& spec;
  const Topology& topo;
  const PlanRequest& req;
  const ParamInventory& inv;
  const std::vector<OffloadMode>& modes;
  Plan best;
  bool have_best = false, best_fits = false;
  double best_key = 0;
  int predictions = 0;  // candidates predicted so far (PlanRequest::max_predictions)
  std::string last_layout_error;
  std::string nodes_refused;  // the runtime's rule for the node counts it cannot run

  // Fitting beats not fitting; among fits, fewer nodes then fewer GPU-seconds; among misfits,
  // the one closest to fitting.
  void offer(const Candidate& c, const PlanOptions& o, int world, const ChunkPlan& chunks,
             Prediction& p) {
    const double key = c.fits ? c.nodes * 1e12 + c.gpu_seconds : pressure(p);
    const bool better =
        !have_best || (c.fits && !best_fits) || (c.fits == best_fits && key < best_key);
    if (!better) return;
    have_best = true;
    best_fits = c.fits;
    best_key = key;
    best.options = o;
    best.world = world;
    best.chunks = chunks;
    best.predicted = std::move(p);
    best.fits = c.fits;
  }

  // Every layout and mode at `nodes`; whether one of them fits. A node count the target
  // runtime cannot run is listed with its rule, not evaluated.
  bool evaluate(int nodes, int gpn) {
    if (const std::string why = req.rules ? req.rules->cannot_run_nodes(nodes) : ""; !why.empty()) {
      for (OffloadMode m : modes)
        best.candidates.push_back({nodes, m, "", false, false, 0, 0, 0, 0, why});
      if (nodes_refused.empty()) nodes_refused = why;  // the first count refused
      return false;
    }
    const int world = nodes * gpn;
    PlanOptions o = req.options;
    o.nodes = nodes;
    o.gpus_per_node = gpn;
    bool any_fit = false;
    std::optional<ChunkPlan> last;  // the last layout's chunks, reused where they are alike
    for (const Layout& asked : layouts_to_try(req, spec, world)) {
      try {
        o.layout = resolve_layout(asked, world, spec);
        if (o.workload) micro_steps(*o.workload, world, o.layout);
      } catch (const InputError& e) {
        // The one world and layout asked for must work; a searched one may not.
        if (!req.auto_nodes && !req.search_ep && !req.search_cp) throw;
        last_layout_error = e.message();
        for (OffloadMode m : modes)
          best.candidates.push_back({nodes, m, "", false, false, 0, 0, 0, 0, e.message()});
        continue;
      }
      const bool alike = last && same_chunking(inv, o.include_mtp, last->layout, o.layout, world);
      last = alike ? relayout(std::move(*last), o.layout)
                   : build_chunks(inv, o.include_mtp, o.layout, world, o.owners,
                                  static_cast<int>(o.schedule.steps.size()));
      const ChunkPlan& chunks = *last;
      for (OffloadMode m : modes) {
        o.offload = m;
        if (o.nesterov && !nesterov_supported(m)) {
          best.candidates.push_back(
              {nodes, m, to_string(o.layout), false, false, 0, 0, 0, 0, kNesterovRefused});
          continue;
        }
        if (lora_offload_refused(o.lora, m)) {
          best.candidates.push_back(
              {nodes, m, to_string(o.layout), false, false, 0, 0, 0, 0, kLoraSlotsOffloadRefused});
          continue;
        }
        if (const std::string why = runtime_refuses(req, m, o.optimizer, o.layout); !why.empty()) {
          best.candidates.push_back({nodes, m, to_string(o.layout), false, false, 0, 0, 0, 0, why});
          continue;
        }
        if (req.between_candidates) req.between_candidates();
        Prediction p = predict(spec, inv, topo, o, chunks, req.parts);
        ++predictions;
        const Candidate c{nodes,
                          m,
                          to_string(o.layout),
                          true,
                          p.fits(),
                          p.gpu_peak_bytes() / kGiB,
                          p.host_bytes() / kGiB,
                          p.step_s(),
                          p.step_s() * world,
                          "",
                          p.fit_margin()};
        best.candidates.push_back(c);
        any_fit = any_fit || c.fits;
        offer(c, o, world, chunks, p);
      }
    }
    return any_fit;
  }
};

// The node counts the search's budget left unevaluated: how many, and the last one's bound.
struct Unevaluated {
  int first = 0, count = 0, last = 0;  // count 0: the budget was not spent
  int budget = 0;
  double last_bound_gib = 0;  // the lower bound on the GPU peak at the last count
};

// The decision in words: why this candidate, or how close the closest came.
std::string explain(const Plan& best, const PlanRequest& req, const std::vector<int>& counts,
                    const std::string& floor_why, int skipped, const Unevaluated& left) {
  const Candidate* chosen = nullptr;
  for (const Candidate& c : best.candidates) {
    if (c.nodes == best.options.nodes && c.offload == best.options.offload && c.evaluated &&
        c.layout == to_string(best.options.layout)) {
      chosen = &c;
    }
  }
  const std::string skip_why =
      skipped > 0 ? "; node counts up to " + std::to_string(skipped) +
                        " not evaluated: their lower bound on the GPU peak is over the limit"
                  : "";
  if (!best.fits && left.count > 0) {
    // Not "does not fit": the counts left were not ruled out.
    return "no candidate evaluated fits; " + std::to_string(left.count) + " node count(s), " +
           std::to_string(left.first) + ".." + std::to_string(left.last) +
           ", not evaluated: the search's budget of " + std::to_string(left.budget) +
           " predicted candidates (--max-predictions) was spent, and their lower bound on the "
           "GPU peak (" +
           fmt("%.4f", left.last_bound_gib) + " GiB at " + std::to_string(left.last) +
           " nodes) is under the limit, so one of them may fit" + skip_why +
           "; closest evaluated: " + std::to_string(chosen->nodes) + " node(s), offload " +
           to_string(chosen->offload) + " (GPU peak " + fmt("%.4f", chosen->gpu_peak_gib) +
           " GiB, host RAM " + fmt("%.0f", chosen->host_ram_per_node_gib) + " GiB per node)";
  }
  if (!best.fits) {
    // Tight: the closest fits the GPU and host RAM, not their headroom (Prediction::Verdict).
    const Prediction& bp = best.predicted;
    const std::string tight =
        bp.fit_verdict() == Prediction::Verdict::tight
            ? "; tight: it fits the limits, " + fmt("%.1f", bp.gpu_headroom_used_bytes() / kGiB) +
                  " GiB into the " + fmt("%.0f", 100 * bp.gpu_headroom) + "% GPU headroom"
            : "";
    // "up to N" only when the counts up to N were tried; a fixed layout says what fixed it.
    const std::string where = counts.size() == 1
                                  ? "at " + std::to_string(counts.back()) + " node(s)"
                                  : "up to " + std::to_string(counts.back()) + " node(s)";
    const std::string fixed = req.search_ep || req.search_cp || req.layout_fixed_by.empty()
                                  ? ""
                                  : "; layout fixed by " + req.layout_fixed_by + " (" +
                                        to_string(best.options.layout) +
                                        "): `--layout auto` searches the layouts";
    return "does not fit on any candidate " + where + floor_why + skip_why + fixed +
           "; closest: " + std::to_string(chosen->nodes) + " node(s), offload " +
           to_string(chosen->offload) + " (GPU peak " + fmt("%.1f", chosen->gpu_peak_gib) +
           " GiB, host RAM " + fmt("%.0f", chosen->host_ram_per_node_gib) + " GiB per node)" +
           tight;
  }
  // Without a workload "fits" is the optimizer step's alone: the decision says so first.
  const std::string scope =
      req.options.workload ? "" : std::string("fits (") + kOptimizerStepOnly + "): ";
  std::string reason = scope + "fewest nodes that fit: " + std::to_string(chosen->nodes) +
                       " node(s), offload " + to_string(chosen->offload) + ": GPU peak " +
                       (chosen->gpu_peak_gib >= 1 ? fmt("%.1f", chosen->gpu_peak_gib)
                                                  : memory_text(chosen->gpu_peak_gib * kGiB, 1)) +
                       " of " + fmt("%.1f", best.predicted.gpu_limit_bytes / kGiB) +
                       " GiB, host RAM " + fmt("%.0f", chosen->host_ram_per_node_gib) + " of " +
                       fmt("%.0f", best.predicted.host_limit_bytes / kGiB) + " GiB per node";
  int alternatives = 0;
  for (const Candidate& c : best.candidates)
    alternatives += c.nodes == chosen->nodes && c.fits && &c != chosen;
  if (alternatives > 0) {
    reason += "; fewest GPU-seconds per step among the " + std::to_string(alternatives + 1) +
              std::string(req.search_ep || req.search_cp ? " layouts and modes" : " modes") +
              " that fit there (" + fmt("%.3f", chosen->gpu_seconds) + " GPU-s)";
  }
  return reason + skip_why;
}

}  // namespace

// Node counts from the first up, each with every layout and mode, until one fits. A node count
// whose lower bound (search_floor.h) is over the limit in every mode is listed, not evaluated;
// the bound only falls with more nodes, so those are a prefix of the counts and the search
// starts near the first fit instead of costing time quadratic in it. Where even the last count
// cannot fit, only the first is evaluated, to show how far off it is.
Plan make_plan(const ModelSpec& spec, const Topology& topo, const PlanRequest& req) {
  const int gpn = gpus_per_node(req.options, topo);
  check_request(topo, req, gpn);
  const int max_nodes = req.max_nodes > 0 ? req.max_nodes : topo.max_nodes;
  const std::vector<int> counts = node_counts_to_try(req, max_nodes, gpn);
  std::vector<OffloadMode> modes = {req.options.offload};
  if (req.auto_offload) modes = {OffloadMode::none, OffloadMode::optimizer, OffloadMode::full};
  const ParamInventory inv = planned_inventory(spec, req.options);
  const PlanOptions& in = req.options;
  // A mode the target runtime refuses whatever the layout: asked for, an input error; searched,
  // left out of the floor's modes (its candidates are listed as not evaluated).
  // The refusal is the mode's when the mode alone is refused (on a one-GPU layout), else the
  // given layout's (CP's rules, ep % cp).
  if (!req.auto_offload) {
    if (const std::string why = runtime_refuses(req, in.offload, in.optimizer, in.layout);
        !why.empty()) {
      const bool mode = !runtime_refuses(req, in.offload, in.optimizer, Layout{}).empty();
      throw InputError({}, mode ? "--offload" : "--layout", why);
    }
  }
  // A node count asked for that the runtime cannot run (prime-rl's rl launcher before
  // rl_slurm ran one node): an input error, not a search with no candidate.
  if (!req.auto_nodes && req.rules) {
    if (const std::string why = req.rules->cannot_run_nodes(in.nodes); !why.empty())
      throw InputError({}, "--nodes", why);
  }
  // The runtime refuses the optimizer itself (no offload, one GPU: prime-rl of a date before
  // it had the optimizer): an input error, not a search with no candidate.
  if (const std::string why = runtime_refuses(req, OffloadMode::none, in.optimizer, Layout{});
      !why.empty())
    throw InputError({}, "--optimizer", why);
  std::vector<OffloadMode> allowed;  // the modes whose candidates are predicted
  for (OffloadMode m : modes) {
    if ((!in.nesterov || nesterov_supported(m)) && !lora_offload_refused(in.lora, m) &&
        runtime_refuses(req, m, in.optimizer, Layout{}).empty())
      allowed.push_back(m);
  }
  const SearchFloor floor(inv, topo, req.options, allowed);

  Search search(spec, topo, req, inv, modes);
  search.best.model_name = spec.name;
  search.best.topology_name = topo.name;
  search.best.topology = topo;
  search.best.gpus_per_node = gpn;
  const bool first_only = !floor.may_fit(int64_t(counts.back()) * gpn);
  int skipped = 0;  // the prefix of counts not evaluated
  Unevaluated left;
  left.budget = req.max_predictions > 0 ? req.max_predictions : kDefaultMaxPredictions;
  const std::string budget_note = "not evaluated: the search's budget of " +
                                  std::to_string(left.budget) +
                                  " predicted candidates (--max-predictions) was spent";
  for (int nodes : counts) {
    if (first_only && nodes != counts.front()) break;
    const int64_t world = int64_t(nodes) * gpn;
    if (req.auto_nodes && !first_only && !allowed.empty() && !floor.may_fit(world)) {
      for (OffloadMode m : modes)
        search.best.candidates.push_back(
            {nodes, m, "", false, false, 0, 0, 0, 0, floor.skip_note(m, world)});
      skipped = nodes;
      continue;
    }
    // A count is evaluated whole, so the budget may be passed by one count's candidates.
    if (req.auto_nodes && search.predictions >= left.budget) {
      for (OffloadMode m : modes)
        search.best.candidates.push_back({nodes, m, "", false, false, 0, 0, 0, 0, budget_note});
      if (left.count++ == 0) left.first = nodes;
      left.last = nodes;
      continue;
    }
    if (search.evaluate(nodes, gpn) && req.auto_nodes) break;  // fewer nodes cannot come later
  }
  if (left.count > 0) left.last_bound_gib = floor.min_gpu_bytes(int64_t(left.last) * gpn) / kGiB;
  Plan& best = search.best;
  if (!search.have_best) {
    // No candidate resolved: say why, the layout's own error or the runtime's rule that left
    // every candidate out (a fixed layout prime-rl refuses: CP on SDPA, say).
    std::string why = search.last_layout_error;
    for (const Candidate& c : search.best.candidates)
      if (why.empty() && !c.note.empty()) why = c.note;
    if (!search.nodes_refused.empty() && why != search.nodes_refused)
      why += "; and more nodes: " + search.nodes_refused;
    throw InputError({}, "--layout", "no candidate node count can take this layout (" + why + ")");
  }
  best.inventory = inv;
  resolve_for_executor(best);
  const std::string floor_why =
      first_only ? floor.why_first_only(counts.size(), int64_t(counts.back()) * gpn) : "";
  best.reason = explain(best, req, counts, floor_why, skipped, left);
  return best;
}

}  // namespace muonplan
