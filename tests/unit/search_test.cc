// The search over node counts and offload modes, and requests it refuses.
#include <catch2/catch.hpp>
#include <set>

#include "muonplan/base/error.h"
#include "test_plans.h"

using namespace muonplan;
using test::h200;
using test::model;

TEST_CASE("the search takes the fewest nodes that fit, then the fewest GPU-seconds", "[search]") {
  PlanRequest r;
  r.auto_nodes = r.auto_offload = true;
  const Plan p = make_plan(model("glm-4.5-air"), h200(), r);
  REQUIRE(p.fits);
  for (const Candidate& c : p.candidates) {
    if (c.fits) CHECK(c.nodes >= p.options.nodes);
    if (c.fits && c.nodes == p.options.nodes)
      CHECK(c.gpu_seconds >= p.predicted.step_s() * p.world - 1e-9);
  }
  CHECK(p.reason.find("fewest nodes that fit") != std::string::npos);
  // Nothing fits in 8 GiB per GPU on up to 2 nodes: an answer, not an error.
  r.options.gpu_memory_gib = 8;
  r.max_nodes = 2;
  const Plan none = make_plan(model("glm-4.5-air"), h200(), r);
  CHECK_FALSE(none.fits);
  // Even 2 nodes are over the search floor: only 1 node is evaluated, in each mode.
  CHECK(none.candidates.size() == 3);
  for (const Candidate& c : none.candidates) CHECK((c.nodes == 1 && c.evaluated));
  CHECK_THAT(none.reason, Catch::StartsWith("does not fit on any candidate up to 2 node(s)") &&
                              Catch::Contains("only the first of 2 node counts was evaluated"));
}

TEST_CASE("impossible requests are input errors with a clear reason", "[search]") {
  PlanRequest r;
  r.options.nodes = 0;
  // The flag's message (plan_request.cc): one function words both.
  CHECK_THROWS_WITH(make_plan(model("qwen3-8b"), h200(), r),
                    "--nodes: expected a positive integer or auto, got '0'");
  CHECK(test::flags_error({{"nodes", "0"}}) ==
        "--nodes: expected a positive integer or auto, got '0'");
  r.options.nodes = 1;
  r.options.layout = parse_layout("fsdp=3");
  CHECK_THROWS_WITH(make_plan(model("qwen3-8b"), h200(), r),
                    Catch::Contains("fsdp=3 does not divide world 8"));
  r.options.layout = parse_layout("ep=2");
  CHECK_THROWS_WITH(make_plan(model("qwen3-8b"), h200(), r), Catch::Contains("needs an MoE model"));
  CHECK_THROWS_WITH(parse_layout("fsdp=x"), "--layout: fsdp must be an integer, got 'x'");
  CHECK_THROWS_WITH(parse_layout("tp=2"), Catch::Contains("unknown key 'tp'"));
}

// Issue 50 item 3: `--nodes N` with no layout fixes one layout at one count; the NO FIT answer
// says so ("at N", not "up to N") and names what fixed the layout, and `--layout auto` searches.
TEST_CASE("a fixed node count says what fixed the layout and where it looked", "[search]") {
  const std::map<std::string, std::string> flags = {{"nodes", "2"}, {"gpu-memory-gib", "10"}};
  const Plan fixed =
      make_plan(model("kimi-k2"), h200(), to_plan_request(plan_flags_from_map(flags)));
  CHECK_FALSE(fixed.fits);
  for (const Candidate& c : fixed.candidates) CHECK(c.layout == fixed.candidates[0].layout);
  CHECK_THAT(fixed.reason,
             Catch::StartsWith("does not fit on any candidate at 2 node(s)") &&
                 Catch::Contains("layout fixed by --nodes 2 with no --layout (fsdp=16,cp=1,ep=1): "
                                 "`--layout auto` searches the layouts") &&
                 !Catch::Contains("up to"));
  std::map<std::string, std::string> given = flags;
  given["layout"] = "fsdp=8";
  const Plan as_given =
      make_plan(model("kimi-k2"), h200(), to_plan_request(plan_flags_from_map(given)));
  CHECK_THAT(as_given.reason,
             Catch::Contains("layout fixed by the layout given (fsdp=8,cp=1,ep=1): "
                             "`--layout auto` searches the layouts"));
  given["layout"] = "auto";
  const Plan searched =
      make_plan(model("kimi-k2"), h200(), to_plan_request(plan_flags_from_map(given)));
  std::set<std::string> layouts;
  for (const Candidate& c : searched.candidates) layouts.insert(c.layout);
  CHECK(layouts.size() > 1);
  CHECK_THAT(searched.reason, Catch::StartsWith("does not fit on any candidate at 2 node(s)") &&
                                  !Catch::Contains("layout fixed"));
}
