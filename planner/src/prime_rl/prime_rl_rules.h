// prime-rl as a target runtime (private to the room; the front door is prime_rl.h): what it can
// run (prime_rl_runs.cc) and --runs-on's choice of runtime and defaults (runs_on.cc).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "muonplan/planner/plan_request.h"
#include "muonplan/planner/runtime_rules.h"

namespace muonplan {

// What prime-rl can run: the one rule that the trainer answer's alternatives and
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

}  // namespace muonplan
