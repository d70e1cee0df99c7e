// The prime-rl importer (planner/src/prime_rl/, docs/trainer-config.md): what the rest of the
// program asks of it. Reading a trainer config into plan flags is prepare_plan's
// (plan_inputs.h, trainer_config_in.h); here are prime-rl's rules for the search, and the
// answer to a config: its plan's best alternatives, each with the keys to change.
#pragma once

#include <string>
#include <vector>

#include "muonplan/planner/alternatives.h"
#include "muonplan/planner/plan_inputs.h"
#include "muonplan/planner/runtime_rules.h"

namespace muonplan {

// What prime-rl (main) can run: the one rule that the trainer answer's alternatives and
// `muonplan plan --emit prime-rl` share, so the emit never writes a config that differs from
// its plan (prime-rl's trainer config: full_offload accepts only AdamW and SignSGD; ep needs
// ep % cp == 0). Why prime-rl cannot run this combination, the trainer change that would allow
// it and the flags that plan one it can run; "" when it can.
std::string prime_rl_cannot_run(OffloadMode offload, OptimizerKind optimizer, const Layout& layout);
// The same rule as the search asks it (runtime_rules.h).
const RuntimeRules& prime_rl_rules();

using TrainerAnswer = Alternatives;

// The config's plan `written` (its nodes, layout and offload) and its best alternatives under
// prime_rl_rules, keeping the config's optimizer and workload; a one-node file also tries more
// of its node's GPUs (those inference leaves).
TrainerAnswer trainer_answer(const ModelSpec& spec, const Topology& topo, const PlanInputs& in,
                             const Plan& written);

// The keys that turn the config into candidate `c` on `gpus_per_node` GPUs per node (0: the
// written plan's); empty when it is the config as written. Keys are named as prime-rl of
// `date` (--prime-rl-version; "" the newest) names them, or as the file does where it uses
// the older SFT [deployment] names; a key that date lacks says so.
std::vector<std::string> keys_to_change(const TrainerConfig& tc, const ModelSpec& spec,
                                        const Plan& written, const Candidate& c,
                                        int gpus_per_node = 0, const std::string& date = "");

}  // namespace muonplan
