// Flags to a PlanRequest (muonplan/plan_request.h): a value given is checked as given, never
// replaced by the default that "not given" stands for.
#include <catch2/catch.hpp>

#include "muonplan/base/error.h"
#include "muonplan/plan_request.h"
#include "test_plans.h"

using namespace muonplan;
using test::error_of;
using test::flags_error;

TEST_CASE("a value given is never silently replaced by the default", "[plan_request]") {
  // 0 means "not given" in PlanFlags; given explicitly it was replaced by the default.
  CHECK(flags_error({{"update_rms", "0"}}) == "--update-rms: must be a finite number > 0, got 0");
  CHECK(flags_error({{"update_rms", "-3"}}) == "--update-rms: must be a finite number > 0, got -3");
  CHECK(flags_error({{"update_rms", "nan"}}) ==
        "--update-rms: must be a finite number > 0, got nan");
  CHECK(flags_error({{"gpus_per_node", "0"}}) ==
        "--gpus-per-node: expected a positive integer, got '0'");
  CHECK(flags_error({{"gpus_per_node", "-4"}}) ==
        "--gpus-per-node: expected a positive integer, got '-4'");
  CHECK(flags_error({{"max_nodes", "0"}}) == "--max-nodes: expected a positive integer, got '0'");
  CHECK(flags_error({{"gpu_memory_gib", "nan"}}) ==
        "--gpu-memory-gib: must be a finite number > 0, got nan");
  CHECK(flags_error({{"host_ram_gib", "0"}}) ==
        "--host-ram-gib: must be a finite number > 0, got 0");
  // Set in the struct (C++ callers), negatives are refused by to_plan_request itself.
  PlanFlags f;
  f.gpus_per_node = -4;
  CHECK(error_of([&] { to_plan_request(f); }) ==
        "--gpus-per-node: expected a positive integer, got '-4'");
  f = PlanFlags{};
  f.hyper.update_rms = -1;
  CHECK(error_of([&] { to_plan_request(f); }) ==
        "--update-rms: must be a finite number > 0, got -1");
  f = PlanFlags{};
  f.gpu_memory_gib = -3;
  CHECK(error_of([&] { to_plan_request(f); }) ==
        "--gpu-memory-gib: must be a finite number > 0, got -3");
  // Not given: the defaults.
  CHECK(flags_error({}) == "(accepted)");
  CHECK(flags_error({{"update_rms", "0.18"}, {"gpus_per_node", "4"}}) == "(accepted)");
}
