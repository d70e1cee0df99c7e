// The target runtime (--runs-on, docs/trainer-config.md "The target runtime"): which one a plan
// is for, and under prime-rl the flag path's defaults at the --prime-rl-version date and the
// rules the search takes (prime_rl_runs.cc). The search itself knows no runtime by name.
#include <string>
#include <utility>
#include <vector>

#include "muonplan/base/error.h"
#include "muonplan/planner/prime_rl.h"
#include "prime_rl/prime_rl_rules.h"
#include "prime_rl/trainer_config_in.h"
#include "trainer_file.h"

namespace muonplan {
namespace {

bool typed(const PlanFlags& f, const char* flag) {
  return f.typed.count(flag) > 0;
}

}  // namespace

std::string runs_on(const PlanFlags& flags, bool prime_rl_input) {
  if (flags.runs_on.empty()) return prime_rl_input ? "prime-rl" : "muonplan";
  if (flags.runs_on != "prime-rl" && flags.runs_on != "muonplan") {
    throw InputError({}, "--runs-on",
                     "expected prime-rl or muonplan, got '" + brief(flags.runs_on) + "'");
  }
  return flags.runs_on;
}

PrimeRlRun prime_rl_run(const PlanFlags& flags, const TrainerConfig* tc) {
  check_prime_rl_version(flags.prime_rl_version);
  PrimeRlRun run;
  run.version = flags.prime_rl_version;
  run.sft = tc ? tc->sft : flags.trainer == "sft";
  run.standalone = tc && tc->standalone;
  run.attention = flags.attention;
  run.cp_style = flags.cp_style;
  run.vlm = tc && tc->vlm;
  run.micro_batch_seqs = flags.micro_batch_seqs;
  run.seq_len = flags.seq_len;
  return run;
}

std::shared_ptr<const RuntimeRules> runtime_rules_for(const PlanFlags& flags, bool prime_rl_input,
                                                      const TrainerConfig* tc) {
  if (runs_on(flags, prime_rl_input) != "prime-rl") return nullptr;
  return prime_rl_rules_for(prime_rl_run(flags, tc));
}

bool prime_rl_ep_auto(const std::string& version) {
  return detail::prime_rl_defaults(version).ep_auto;
}

PlanRequest runs_on_request(PlanFlags flags, bool prime_rl_input,
                            std::vector<std::string>* defaults_set) {
  return runs_on_request(std::move(flags), prime_rl_input, nullptr, defaults_set);
}

PlanRequest runs_on_request(PlanFlags flags, bool prime_rl_input, const TrainerConfig* tc,
                            std::vector<std::string>* defaults_set) {
  const bool prime = runs_on(flags, prime_rl_input) == "prime-rl";
  if (prime && !prime_rl_input) {
    const std::vector<std::string> set = apply_prime_rl_flag_defaults(flags);
    if (defaults_set) *defaults_set = set;
  }
  PlanRequest r = to_plan_request(flags);
  r.rules = runtime_rules_for(flags, prime_rl_input, tc);
  // prime-rl's ep = "auto" where the flags name no ep (a trainer config's layout names one).
  r.ep_by_runtime = prime && !prime_rl_input && flags.layout.find("ep=") == std::string::npos &&
                    prime_rl_ep_auto(flags.prime_rl_version);
  return r;
}

std::vector<std::string> apply_prime_rl_flag_defaults(PlanFlags& flags) {
  const detail::PrimeRlDefaults d = detail::prime_rl_defaults(flags.prime_rl_version);
  std::vector<std::string> set;
  auto take = [&](const char* flag, const std::string& value, const char* why) {
    if (typed(flags, flag)) return;
    set_plan_flag(flags, flag, value);
    flags.typed.erase(flag);  // still the user's to override: a default, not a flag given
    set.push_back("--" + std::string(flag) + " " + value + " (" + why + ")");
  };
  // The keys' defaults of prime-rl's trainer config on that date (prime_rl_versions.cc).
  take("ac", d.ac ? "full" : "none", "[model.ac]");
  // prime-rl's offloading default under selective AC or AC every few layers: what it offloads
  // there is not modelled (workload_cost.cc), so the user declines it, which the emit writes.
  if (d.ac && d.ac_offloading && !typed(flags, "ac-offload") &&
      (flags.ac == "selective" || flags.ac_freq > 1)) {
    throw InputError(
        {}, "--ac-offload",
        "prime-rl" +
            std::string(flags.prime_rl_version.empty() ? "" : " of " + flags.prime_rl_version) +
            " offloads activations by default ([model.ac_offloading]), which muonplan "
            "plans with full AC on every layer only: give --ac-offload=false (the "
            "emitted config then turns it off) or --ac full");
  }
  take("ac-offload", d.ac && d.ac_offloading ? "true" : "false", "[model.ac_offloading]");
  if (flags.trainer != "sft")  // RL's fused LM head; SFT's head is its loss's
    take("lm-head-chunk", std::to_string(d.lm_head_chunk), "fused_lm_head_token_chunk_size");
  // prime-rl's CP style: ring from its first CP (the ring-flash-attn kernel) and the default
  // of [model] cp_style since that key came (#2418); muonplan's own default is ulysses.
  take("cp-style", "ring", "[model] cp_style");
  // prime-rl's launcher starts every trainer with expandable segments (read_allocator), from
  // #1480 (2025-12-24); before it with PyTorch's default allocator.
  if (d.expandable_segments)
    take("allocator", "expandable", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
  else
    take("allocator", "default", "the launcher set no PYTORCH_CUDA_ALLOC_CONF before #1480");
  // The RL trainer, the runtime rules' default, unless --trainer or --emit prime-rl-sft named one.
  default_prime_rl_trainer(flags, false);
  return set;
}

}  // namespace muonplan
