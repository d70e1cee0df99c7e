// The best alternatives to a written plan by each objective (docs/trainer-config.md, "The
// answer"): fewest nodes that fit, fewest GPU-seconds, shortest step, among the candidates a
// target runtime can run (runtime_rules.h). Built on make_plan's search, one node count at a
// time. What a runtime's config must change to get each is its importer's (prime_rl.h).
#pragma once

#include <string>
#include <vector>

#include "muonplan/planner/plan.h"
#include "muonplan/planner/runtime_rules.h"

namespace muonplan {

struct Alternative {
  std::string objective;  // "fewest nodes that fit", "fewest GPU-seconds", "shortest step"
  Candidate candidate;
  int gpus_per_node = 0;  // the candidate's (a one-node run also tries more GPUs in its node)
  std::vector<std::string> keys;  // the runtime's config changes, filled by its importer
};

struct Alternatives {
  Candidate as_written;
  int max_nodes = 0;                      // the sweep's bound (--max-nodes or the topology's)
  std::vector<int> node_counts;           // the node counts swept
  std::vector<Alternative> alternatives;  // those that fit, by objective; empty if none fits
};

// `written` is the plan `request` made (its nodes, layout and offload). Alternatives keep its
// optimizer and workload and take only what `rules` runs. A one-node plan also tries one node
// of up to `one_node_gpus` GPUs (0 or fewer than the written plan's: none more).
Alternatives best_alternatives(const ModelSpec& spec, const Topology& topo,
                               const PlanRequest& request, const Plan& written,
                               const RuntimeRules& rules, int one_node_gpus = 0);

}  // namespace muonplan
