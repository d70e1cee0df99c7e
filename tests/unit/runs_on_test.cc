// The target runtime (--runs-on, prime_rl.h runs_on; issue 50 item 1): under prime-rl the flag
// path takes prime-rl's defaults at the --prime-rl-version date, and the search, through the
// request's RuntimeRules, predicts only what that prime-rl runs; each refusal names its rule and
// what would lift it. muonplan (the default without a prime-rl input) runs every candidate.
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "muonplan/planner/prime_rl.h"
#include "prime_rl/prime_rl_rules.h"
#include "prime_rl/trainer_config_in.h"
#include "test_plans.h"

using namespace muonplan;
using namespace muonplan::test;  // model, topology and plan helpers (test_plans.h)

namespace {

PlanInputs flag_inputs(const std::map<std::string, std::string>& given) {
  return prepare_plan(repo_path("models/glm-4.5-air.yaml"), plan_flags_from_map(given));
}

const std::map<std::string, std::string> kWorkload = {{"tokens-per-step", "262144"},
                                                      {"seq-len", "4096"}};

std::map<std::string, std::string> with(std::map<std::string, std::string> m,
                                        const std::map<std::string, std::string>& more) {
  for (const auto& [k, v] : more) m[k] = v;
  return m;
}

}  // namespace

TEST_CASE("runs-on: muonplan unless a prime-rl input or the flag says prime-rl", "[runs_on]") {
  PlanFlags f;
  CHECK(runs_on(f, false) == "muonplan");
  CHECK(runs_on(f, true) == "prime-rl");
  f.runs_on = "muonplan";
  CHECK(runs_on(f, true) == "muonplan");
  f.runs_on = "primerl";
  CHECK(error_of([&] { runs_on(f, false); }, "") ==
        "--runs-on: expected prime-rl or muonplan, got 'primerl'");
  CHECK(flag_inputs(kWorkload).request.rules == nullptr);
  CHECK(flag_inputs(with(kWorkload, {{"runs-on", "prime-rl"}})).request.rules != nullptr);
}

TEST_CASE("runs-on prime-rl: the flag path takes prime-rl's defaults of its date", "[runs_on]") {
  const PlanInputs now = flag_inputs(with(kWorkload, {{"runs-on", "prime-rl"}}));
  const Workload& w = *now.request.options.workload;
  CHECK(w.ac_full);
  CHECK(w.ac_offload);
  CHECK(w.lm_head_chunk == 8192);
  CHECK(*now.request.options.expandable_segments);
  CHECK(now.request.ep_by_runtime);
  // prime-rl's CP is ring unless cp_style = "ulysses" (muonplan's own default is ulysses).
  CHECK(w.cp_style == CpStyle::ring);
  CHECK(flag_inputs(with(kWorkload, {{"runs-on", "prime-rl"}, {"cp-style", "ulysses"}}))
            .request.options.workload->cp_style == CpStyle::ulysses);
  // muonplan keeps its own: no AC offload, an unfused head, ep 1, ulysses CP.
  const PlanInputs own = flag_inputs(kWorkload);
  CHECK(own.request.options.workload->cp_style == CpStyle::ulysses);
  CHECK_FALSE(own.request.options.workload->ac_offload);
  CHECK(own.request.options.workload->lm_head_chunk == 0);
  CHECK_FALSE(own.request.ep_by_runtime);
  // Before 2026-06-26 (c5afcaa2e) prime-rl had no AC, AC offload, ep auto or fused head by
  // default; a flag given wins over the default.
  const PlanInputs old = flag_inputs(with(
      kWorkload, {{"runs-on", "prime-rl"}, {"prime-rl-version", "2026-03-01"}, {"ac", "full"}}));
  CHECK(old.request.options.workload->ac_full);
  CHECK_FALSE(old.request.options.workload->ac_offload);
  CHECK(old.request.options.workload->lm_head_chunk == 0);
  CHECK_FALSE(old.request.ep_by_runtime);
}

TEST_CASE("runs-on prime-rl: the search never chooses what prime-rl refuses", "[runs_on]") {
  const Topology topo = h200();
  const ModelSpec spec = model("glm-4.5-air");
  // GLM-4.5-Air with Muon on one node: muonplan's choice is full offload, which prime-rl refuses.
  const auto one_node = with(kWorkload, {{"nodes", "1"}});
  const Plan own = make_plan(spec, topo, flag_inputs(one_node).request);
  REQUIRE(own.fits);
  CHECK(own.options.offload == OffloadMode::full);
  const Plan prime =
      make_plan(spec, topo, flag_inputs(with(one_node, {{"runs-on", "prime-rl"}})).request);
  int refused = 0;
  for (const Candidate& c : prime.candidates) {
    if (c.offload != OffloadMode::full) continue;
    CHECK_FALSE(c.evaluated);
    CHECK_THAT(c.note, Catch::StartsWith("Muon under full offload: prime-rl's full_offload "
                                         "accepts only adamw and sign_sgd (it would run once"));
    ++refused;
  }
  CHECK(refused == 1);
  CHECK(prime.options.offload != OffloadMode::full);
  // prime-rl's ep = "auto" on the fixed layout: 8 of GLM-4.5-Air's 128 experts' divisors.
  CHECK(prime.options.layout.ep == 8);
  // A mode asked for that prime-rl refuses is an input error naming the rule.
  CHECK_THAT(error_of(
                 [&] {
                   make_plan(
                       spec, topo,
                       flag_inputs(with(one_node, {{"runs-on", "prime-rl"}, {"offload", "full"}}))
                           .request);
                 },
                 ""),
             Catch::StartsWith("--offload: Muon under full offload"));
  // AdamW under full offload: prime-rl runs it from full_offload's date (b8d9553c0), not before.
  const auto adamw = with(one_node, {{"runs-on", "prime-rl"}, {"optimizer", "adamw"}});
  const Plan dated =
      make_plan(spec, topo, flag_inputs(with(adamw, {{"prime-rl-version", "2026-07-01"}})).request);
  bool said = false;
  for (const Candidate& c : dated.candidates) {
    if (c.offload != OffloadMode::full) continue;
    CHECK_FALSE(c.evaluated);
    said = c.note.find("prime-rl of 2026-07-01 has no [trainer.model] full_offload") !=
           std::string::npos;
  }
  CHECK(said);
  for (const Candidate& c : make_plan(spec, topo, flag_inputs(adamw).request).candidates)
    CHECK(c.evaluated);
}

TEST_CASE("runs-on prime-rl: ep auto as prime-rl resolves it", "[runs_on]") {
  const RuntimeRules& rules = prime_rl_rules();
  const ModelSpec moe = model("glm-4.5-air"), dense = model("qwen3-8b");
  REQUIRE(moe.moe.num_experts == 128);
  CHECK(rules.default_ep(moe, 8, 1) == 8);
  CHECK(rules.default_ep(moe, 16, 1) == 8);  // at most 8
  CHECK(rules.default_ep(moe, 12, 1) == 4);  // divides the island and the experts
  CHECK(rules.default_ep(moe, 8, 4) == 8);   // a multiple of cp
  CHECK(rules.default_ep(moe, 6, 3) == 1);   // no multiple of 3 divides 128
  CHECK(rules.default_ep(dense, 8, 1) == 1);
  CHECK(any_runtime().default_ep(moe, 8, 1) == 1);
}

TEST_CASE("ep = auto: one rule for --runs-on and a trainer config (prime_rl_auto_ep)",
          "[runs_on]") {
  const ModelSpec moe = model("qwen3-30b-a3b");  // 128 experts
  CHECK(prime_rl_auto_ep(moe, 8, 1) == 8);
  CHECK(prime_rl_auto_ep(moe, 12, 1) == 4);  // 8 does not divide the island of 12
  CHECK(prime_rl_auto_ep(moe, 6, 1) == 2);   // nor 6 the 128 experts
  CHECK(prime_rl_auto_ep(moe, 8, 3) == 1);   // ep a multiple of cp
  CHECK(prime_rl_auto_ep(model("qwen3-8b"), 8, 1) == 1);
  TrainerConfig tc;
  tc.dp_replicate = 2;  // a trainer config's ep = "auto" takes the same rule over world / 2
  CHECK(tc.resolved_ep(moe, 24) == 4);
  CHECK(tc.resolved_ep(moe, 16) == 8);
}
