// prime-rl as a target runtime (private to the room; the front door is prime_rl.h): what it can
// run (prime_rl_runs.cc) and --runs-on's choice of runtime and defaults (runs_on.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "muonplan/planner/plan_request.h"
#include "muonplan/planner/runtime_rules.h"

namespace muonplan {

struct TrainerConfig;

// What prime-rl's config validators read besides the candidate (its layout, offload and
// optimizer): the run the rules judge. Defaults: the newest prime-rl, an RL text model, the
// attention kernel unknown (no CP rule of the kernel applies).
struct PrimeRlRun {
  std::string version;           // --prime-rl-version (YYYY-MM-DD); "" the newest known
  bool sft = false;              // the SFT trainer (sft.py's validators)
  bool standalone = false;       // a trainer file: torchrun's world, no launcher
  std::string attention;         // --attention: fa2 | fa3 | sdpa | auto; "" not given
  std::string cp_style;          // ring | ulysses; "" not given
  bool vlm = false;              // [model.vlm]
  int64_t micro_batch_seqs = 1;  // SFT data.micro_batch_size
  int64_t seq_len = 0;           // 0: not known
};
// The run of these flags (and of the trainer config they came from: its [model.vlm]).
PrimeRlRun prime_rl_run(const PlanFlags& flags, const TrainerConfig* tc = nullptr);

// What prime-rl can run: the one rule that the search, the trainer answer's alternatives and
// `muonplan plan --emit prime-rl` share, so the emit never writes a config that differs from
// its plan. Why prime-rl (of run.version) cannot run this combination, naming the rule, the
// prime-rl change that lifts it and the flags that plan one it can run; "" when it can
// (prime_rl_runs.cc: the optimizers of the date, full_offload and its optimizers, ep % cp, CP's
// attention kernel, VLM CP's style, SFT CP's micro batch and sequence length, SFT cp's era).
std::string prime_rl_cannot_run(OffloadMode offload, OptimizerKind optimizer, const Layout& layout,
                                const PrimeRlRun& run);
// Why prime-rl cannot run the run's trainer over `nodes` nodes: an RL config before rl_slurm
// (its rl launcher ran one node); "" when it can (prime_rl_runs.cc).
std::string prime_rl_cannot_run_nodes(int nodes, const PrimeRlRun& run);
// The same with only a date (`version`; "" the newest): the rules of the candidate alone.
std::string prime_rl_cannot_run(OffloadMode offload, OptimizerKind optimizer, const Layout& layout,
                                const std::string& version = "");
// The same rule as the search asks it (runtime_rules.h): prime-rl's newest, and the prime-rl of
// `version` (--prime-rl-version; InputError on a bad date), and of a whole run, which
// `--runs-on prime-rl` sets as the plan request's rules (prepare_plan).
const RuntimeRules& prime_rl_rules();
// prime-rl's ep = "auto" (parallel_dims.py resolve_ep): the largest ep up to 8 that divides the
// expert count and the FSDP island (`fsdp` = world / dp_replicate) and is a multiple of cp; 1
// for a dense model. The rules' default_ep and a trainer config's ep = "auto" both take it.
int prime_rl_auto_ep(const ModelSpec& spec, int fsdp, int cp);
std::shared_ptr<const RuntimeRules> prime_rl_rules_on(const std::string& version);
std::shared_ptr<const RuntimeRules> prime_rl_rules_for(const PrimeRlRun& run);

// runs_on_request (prime_rl.h) with the trainer config the flags came from (null: none).
PlanRequest runs_on_request(PlanFlags flags, bool prime_rl_input, const TrainerConfig* tc,
                            std::vector<std::string>* defaults_set);

// --runs-on: "prime-rl" or "muonplan" as given; else prime-rl for a prime-rl input (a trainer
// config, --emit prime-rl) and muonplan otherwise. InputError "--runs-on: ..." for another name.
std::string runs_on(const PlanFlags& flags, bool prime_rl_input);
// Under --runs-on prime-rl without a trainer config: prime-rl's defaults at the
// --prime-rl-version date (prime_rl_versions.cc) for every flag the user did not give (AC, AC
// offload, the fused LM head, ring CP, expandable segments); each default set, "--FLAG VALUE
// (key)".
std::vector<std::string> apply_prime_rl_flag_defaults(PlanFlags& flags);
// The plan request's rules for that runtime: prime-rl's of --prime-rl-version, or null (every
// candidate) for muonplan.
std::shared_ptr<const RuntimeRules> runtime_rules_for(const PlanFlags& flags, bool prime_rl_input,
                                                      const TrainerConfig* tc = nullptr);
// Whether prime-rl of `version` defaults to ep = "auto" (from 2026-06-26; before it, 1).
bool prime_rl_ep_auto(const std::string& version);

}  // namespace muonplan
