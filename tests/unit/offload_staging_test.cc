// One staging enum (OffloadStaging, plan_options.h) for the choice `optimizer` offload makes and
// the offload policy's answer: the policy hands back what was chosen, and `none` only where the
// mode stages nothing.
#include <catch2/catch.hpp>

#include "muonplan/planfile/offload_policy.h"
#include "muonplan/planner/plan.h"
#include "test_plans.h"

using namespace muonplan;

TEST_CASE("the offload policy's staging is the one chosen, none where nothing is staged",
          "[offload_staging]") {
  for (OffloadStaging s : {OffloadStaging::whole, OffloadStaging::chunked}) {
    CHECK(offload_policy(OffloadMode::optimizer, s).staging == s);
    CHECK(offload_policy(OffloadMode::none, s).staging == OffloadStaging::none);
    CHECK(offload_policy(OffloadMode::full, s).staging == OffloadStaging::none);
    // The plan file's name reads back to the same value.
    CHECK(parse_offload_staging(to_string(s)) == s);
  }
  CHECK(offload_policy(OffloadMode::optimizer, OffloadStaging::none).staging ==
        OffloadStaging::whole);  // the default staging of `optimizer`
  CHECK(std::string(to_string(OffloadStaging::none)) == "none");
  // `none` is implied by the mode, not a choice.
  CHECK(test::error_of([] { parse_offload_staging("none"); }) ==
        "--offload-staging: expected whole or chunked, got 'none'");
  // The plan file states the choice: a plan with `none` is refused.
  CHECK(test::plan_error_after([](nlohmann::json& j) {
          j["optimizer_config"]["optimizer_offload_staging"] = "none";
        }) ==
        "plan.json: optimizer_config.optimizer_offload_staging: expected whole or "
        "chunked, got 'none'");
}
