// Flags to a PlanRequest (muonplan/planner/plan_request.h): a value given is checked as given,
// never replaced by the default that "not given" stands for.
#include <algorithm>
#include <catch2/catch.hpp>

#include "muonplan/base/error.h"
#include "muonplan/planner/plan_flag_table.h"
#include "muonplan/planner/plan_request.h"
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

TEST_CASE("plan flags from text: typed, named as on the command line", "[plan_request]") {
  const PlanFlags f = plan_flags_from_map({{"nodes", "2"},
                                           {"bf16_momentum", "true"},
                                           {"gpu-memory-gib", "80.5"},
                                           {"tokens_per_step", "1048576"},
                                           {"lr", "0.01"}});
  CHECK(f.nodes == "2");
  CHECK(f.bf16_momentum);
  CHECK(f.gpu_memory_gib == 80.5);
  CHECK(f.tokens_per_step == 1048576);
  CHECK(f.hyper.lr == 0.01);
  PlanFlags g;
  CHECK(error_of([&] { set_plan_flag(g, "gpus_per_node", "abc"); }) ==
        "--gpus-per-node: expected an integer, got 'abc'");
  CHECK(error_of([&] { set_plan_flag(g, "nesterov", "maybe"); }) ==
        "--nesterov: expected true or false, got 'maybe'");
  CHECK(error_of([&] { set_plan_flag(g, "frobnicate", "1"); }) == "--frobnicate: unknown option");
  CHECK(error_of([&] {
          to_plan_request(plan_flags_from_map({{"nodes", "0"}}));
        }) == "--nodes: expected a positive integer or auto, got '0'");
  CHECK(plan_flag_names().front() == "nodes");
}

TEST_CASE("flag values compare at full precision, whatever the help prints", "[plan_request]") {
  // plan_flag_value decides whether a flag over a trainer config differs from its default: a
  // 6-digit form (the help's) took --lr 0.0200000001 for the default 0.02 and kept the file's.
  PlanFlags f;
  set_plan_flag(f, "lr", "0.0200000001");
  CHECK(plan_flag_value(f, "lr") != plan_flag_value(PlanFlags{}, "lr"));
  set_plan_flag(f, "lr", plan_flag_value(f, "lr"));
  CHECK(f.hyper.lr == 0.0200000001);  // the text reads back to the same double
  set_plan_flag(f, "adamw-betas", "0.9,0.9500000001");
  CHECK(plan_flag_value(f, "adamw-betas") != plan_flag_value(PlanFlags{}, "adamw-betas"));
}

TEST_CASE("the plan option table: every row a flag set_plan_flag takes, defaults as read back",
          "[plan_request]") {
  const std::vector<PlanFlagInfo>& table = plan_flag_table();
  std::vector<std::string> names;
  for (const PlanFlagInfo& o : table) names.push_back(o.name);
  CHECK(names == plan_flag_names());
  const auto row = [&](const std::string& name) {
    return *std::find_if(table.begin(), table.end(),
                         [&](const PlanFlagInfo& o) { return o.name == name; });
  };
  CHECK(row("lr").default_text == "0.02");  // OptimizerHyper's lr, to 6 digits
  CHECK(row("nodes").default_text == "auto");
  CHECK(row("nodes").search_only);
  CHECK(row("gpus-per-node").default_text.empty());  // 0 means "the topology's"
  CHECK(row("bf16-momentum").type == "BOOL");
  for (const PlanFlagInfo& o : table) {
    INFO(o.name);
    CHECK(!o.help.empty());
    PlanFlags f;
    if (!o.default_text.empty()) CHECK_NOTHROW(set_plan_flag(f, o.name, o.default_text));
  }
}
