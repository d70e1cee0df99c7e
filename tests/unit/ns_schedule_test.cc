// Newton-Schulz schedules (muonplan/planfile/ns_schedule.h): at most 64 steps, from a flag, a name
// or a plan file.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "muonplan/base/error.h"
#include "muonplan/planfile/ns_schedule.h"
#include "test_plans.h"

using namespace muonplan;
using json = nlohmann::json;
using test::error_of;
using test::flags_error;
using test::plan_error_after;

namespace {

std::string schedule_of(int steps) {
  std::string s;
  for (int i = 0; i < steps; ++i) s += (i ? ";" : "") + std::string("3.4445,-4.775,2.0315");
  return s;
}

}  // namespace

TEST_CASE("Newton-Schulz schedules have at most 64 steps", "[ns_schedule]") {
  CHECK(ns_schedule(schedule_of(64)).steps.size() == 64);
  CHECK(error_of([] { ns_schedule(schedule_of(65)); }) ==
        "--ns-schedule: expected 1 to 64 (a, b, c) steps, got 65");
  CHECK(flags_error({{"ns_schedule", schedule_of(65)}}) ==
        "--ns-schedule: expected 1 to 64 (a, b, c) steps, got 65");
  CHECK(plan_error_after([](json& j) {
          j["optimizer_config"]["newton_schulz_coefficients"] =
              json(std::vector<json>(65, {3.4445, -4.775, 2.0315}));
        }) ==
        "plan.json: optimizer_config.newton_schulz_coefficients: expected 1 to 64 (a, b, "
        "c) steps, got 65");
  CHECK(plan_error_after([](json& j) {
          j["optimizer_config"]["newton_schulz_coefficients"] =
              json(std::vector<json>(64, {3.4445, -4.775, 2.0315}));
        }) == "(accepted)");
}
