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
// `version` (YYYY-MM-DD; "" the newest known) adds the eras of the version table: full offload
// before prime-rl had full_offload.
std::string prime_rl_cannot_run(OffloadMode offload, OptimizerKind optimizer, const Layout& layout,
                                const std::string& version = "");
// The same rule as the search asks it (runtime_rules.h): prime-rl's newest, and the prime-rl of
// `version` (--prime-rl-version; InputError on a bad date), which `--runs-on prime-rl` sets as
// the plan request's rules (prepare_plan).
const RuntimeRules& prime_rl_rules();
std::shared_ptr<const RuntimeRules> prime_rl_rules_on(const std::string& version);

// --runs-on: "prime-rl" or "muonplan" as given; else prime-rl for a prime-rl input (a trainer
// config, --emit prime-rl) and muonplan otherwise. InputError "--runs-on: ..." for another name.
// It is the runtime a plan is for (what it can run, and its defaults), not --runtime's memory
// model (muonplan | pytorch).
std::string runs_on(const PlanFlags& flags, bool prime_rl_input);
// Under --runs-on prime-rl without a trainer config: prime-rl's defaults at the
// --prime-rl-version date (prime_rl_versions.cc) for every flag the user did not give (AC, AC
// offload, the fused LM head, expandable segments); each default set, "--FLAG VALUE (key)".
std::vector<std::string> apply_prime_rl_flag_defaults(PlanFlags& flags);
// The plan request's rules for that runtime: prime-rl's of --prime-rl-version, or null (every
// candidate) for muonplan.
std::shared_ptr<const RuntimeRules> runtime_rules_for(const PlanFlags& flags, bool prime_rl_input);
// Whether prime-rl of `version` defaults to ep = "auto" (from 2026-06-26; before it, 1).
bool prime_rl_ep_auto(const std::string& version);
// to_plan_request for the runtime --runs-on names (every front end: plan, report, Python):
// under prime-rl without a prime-rl input, its flag defaults first (each listed in
// *defaults_set when given), then its rules and its ep = "auto".
PlanRequest runs_on_request(PlanFlags flags, bool prime_rl_input,
                            std::vector<std::string>* defaults_set = nullptr);

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
