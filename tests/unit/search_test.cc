// The search over node counts and offload modes, and requests it refuses.
#include <catch2/catch.hpp>

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
