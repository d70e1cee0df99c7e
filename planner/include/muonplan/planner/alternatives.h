// The answer to a prime-rl user's question (docs/trainer-config.md, "The answer"): the config
// as written, and the best alternative by each objective, each with the exact prime-rl keys
// to change. Built on make_plan's search, one node count at a time.
#pragma once

#include <string>
#include <vector>

#include "muonplan/planner/plan.h"
#include "muonplan/planner/plan_inputs.h"

namespace muonplan {

struct Alternative {
  std::string objective;  // "fewest nodes that fit", "fewest GPU-seconds", "shortest step"
  Candidate candidate;
  int gpus_per_node = 0;  // the candidate's (a one-node file also tries more GPUs in its node)
  std::vector<std::string> keys;  // "[deployment] num_train_nodes = 2", in file order
};

struct TrainerAnswer {
  Candidate as_written;
  int max_nodes = 0;                      // the sweep's bound (--max-nodes or the topology's)
  std::vector<int> node_counts;           // the node counts swept
  std::vector<Alternative> alternatives;  // those that fit, by objective; empty if none fits
};

// `written` is the plan of the config as written (its nodes, layout and offload). Alternatives
// keep the config's optimizer and workload and take only layouts prime-rl accepts (ep % cp ==
// 0; full offload only for adamw and sign_sgd).
TrainerAnswer trainer_answer(const ModelSpec& spec, const Topology& topo, const PlanInputs& in,
                             const Plan& written);

// The keys that turn the config into candidate `c` on `gpus_per_node` GPUs per node (0: the
// written plan's); empty when it is the config as written.
std::vector<std::string> keys_to_change(const TrainerConfig& tc, const ModelSpec& spec,
                                        const Plan& written, const Candidate& c,
                                        int gpus_per_node = 0);

}  // namespace muonplan
