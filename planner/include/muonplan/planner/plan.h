// Planning: what to search, and the search that chooses a Plan (plan_file.h: the Plan and its
// file, the interface between planner and executor).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "muonplan/planfile/plan_file.h"
#include "muonplan/planner/chunks.h"
#include "muonplan/planner/cost_model.h"
#include "muonplan/planner/model_spec.h"
#include "muonplan/planner/topology.h"

namespace muonplan {

class RuntimeRules;  // runtime_rules.h

// What to search: fixed or automatic node count and offload mode.
struct PlanRequest {
  PlanOptions options;  // options.nodes / options.offload are used when not automatic
  bool auto_nodes = false;
  bool auto_offload = false;
  int max_nodes = 0;  // 0: the topology's max_nodes
  // auto_nodes searches these (ascending, each at most max_nodes) when not empty, else
  // 1..max_nodes: a report's sweep chooses among its own node counts.
  std::vector<int> node_counts;
  // Layout search: enumerate ep (divisors of the expert count that divide the world) and, with
  // a workload, cp (1, 2, 4, 8 dividing the sequence); a dimension the layout names is fixed.
  bool search_ep = false, search_cp = false;
  // What fixed the layout when neither dimension is searched ("--nodes 2 with no --layout",
  // "the layout given (fsdp=8)"): a NO FIT decision names it and says that `--layout auto`
  // searches. Empty: not said (a searched layout, or a request not made from flags).
  std::string layout_fixed_by;
  // The target runtime's rules (--runs-on, runtime_rules.h): the search predicts only the
  // candidates it runs and lists the others as not evaluated, each with the rule and what would
  // lift it; a fixed offload mode it refuses is an input error. Null: a runtime that runs every
  // candidate (muonplan's executor). The search knows no runtime by name.
  std::shared_ptr<const RuntimeRules> rules;
  // The layout names no ep and the search does not enumerate it: the rules' default_ep picks
  // it (prime-rl's ep = "auto"), else 1.
  bool ep_by_runtime = false;
  // --nodes auto predicts at most about this many candidates (0: kDefaultMaxPredictions): the
  // node counts left once it is spent are listed as not evaluated, and the decision says that
  // one of them may fit. A limit within a few MiB of the GPU peak at every large world leaves
  // thousands of counts the lower bound cannot rule out (docs/planner.md section 9).
  int max_predictions = 0;
  // Called before each candidate is predicted; it may throw to end the search. The Python
  // bindings check for Ctrl-C there (a search of thousands of candidates otherwise ran on
  // past KeyboardInterrupt).
  std::function<void()> between_candidates;
  // What each candidate's prediction computes. `without_allocator_replay` (cost_model.h) leaves
  // every candidate's GPU figures and fit verdict unread: best_alternatives sweeps that way and
  // replays only the candidates it ranks (alternatives.cc).
  PredictParts parts = PredictParts::all;
  // --prime-rl-version, checked (a calendar date YYYY-MM-DD); empty: the newest known. Kept for
  // the step-time model's eras (issue 49); no predicted figure reads it yet.
  std::string prime_rl_version;
};

// Candidates --nodes auto predicts at most, unless asked otherwise: a bundled model's search
// predicts under 100; 1000 kimi-k2 candidates at 100k ranks take about 20 s.
inline constexpr int kDefaultMaxPredictions = 1000;

// The one message for a node count that is not one (the flag's text or a request's number):
// "expected a positive integer or auto, got 'GOT'", said of --nodes.
std::string bad_nodes_message(const std::string& got);

// Evaluates the candidates and returns the chosen plan. InputError for impossible requests
// (a layout no candidate world can take, zero nodes); "fits nowhere" is a plan with fits false.
Plan make_plan(const ModelSpec& spec, const Topology& topo, const PlanRequest& request);

}  // namespace muonplan
