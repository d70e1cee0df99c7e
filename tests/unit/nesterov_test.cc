// Nesterov momentum under full offload is refused by one check (check_nesterov, plan_options.h)
// with one message, whichever path meets it: the flags, the plan loader, the search's and the
// report's candidates (the executor's paths: tests/cli/plan_cli.sh, tests/exec_step).
#include <catch2/catch.hpp>
#include <string>

#include "muonplan/planner/plan.h"
#include "muonplan/tools/report_data.h"
#include "test_plans.h"

using namespace muonplan;
using json = nlohmann::json;

TEST_CASE("every Nesterov refusal gives the one message", "[nesterov]") {
  const std::string why = kNesterovRefused;
  CHECK(why.find("full offload") != std::string::npos);
  CHECK(why.find("--offload optimizer or none") != std::string::npos);
  // The flags.
  CHECK(test::flags_error({{"nesterov", "true"}, {"offload", "full"}}) == "--nesterov: " + why);
  CHECK(test::flags_error({{"nesterov", "true"}, {"offload", "optimizer"}}) == "(accepted)");
  // A plan file edited by hand.
  PlanRequest full = test::one_rank();
  full.options.offload = OffloadMode::full;
  CHECK(test::plan_error_after(test::tiny_plan(full), [](json& j) {
          j["optimizer_config"]["nesterov"] = true;
        }) == "plan.json: optimizer_config.nesterov: " + why);
  // A plan built in memory, as execute and the step receive it.
  Plan plan = plan_from_json(test::tiny_plan(full), "plan.json");
  plan.options.nesterov = true;
  CHECK(test::error_of([&] { check_nesterov(plan.options, "--plan"); }) == "--plan: " + why);
  plan.options.offload = OffloadMode::optimizer;
  CHECK(test::error_of([&] { check_nesterov(plan.options, "--plan"); }) == "");
  // The search's candidates under --offload auto.
  PlanRequest any = test::one_rank();
  any.auto_offload = true;
  any.options.nesterov = true;
  const Plan searched = make_plan(test::model("tiny-dense"), test::topology("cpu-ci"), any);
  int refused = 0;
  for (const Candidate& c : searched.candidates) {
    if (c.offload != OffloadMode::full) continue;
    CHECK(c.note == why);
    ++refused;
  }
  CHECK(refused > 0);
  // The report's sweep.
  ReportInputs in;
  in.node_counts = {1};
  const json d = report_data(test::model("tiny-dense"), test::topology("cpu-ci"), any, in);
  refused = 0;
  for (const json& p : d["sweep"]) {
    if (p["offload"] != "full") continue;
    CHECK(p["evaluated"] == false);
    CHECK(p["note"] == why);
    ++refused;
  }
  CHECK(refused > 0);
}
