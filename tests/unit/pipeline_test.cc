// The pipeline simulation of the optimizer step's chunks: stages on shared resources overlap.
#include <catch2/catch.hpp>

#include "muonplan/planner/plan.h"

using namespace muonplan;

TEST_CASE("the pipeline overlaps one chunk's exchange with another's compute", "[pipeline]") {
  const std::vector<Stage> chunk = {
      {Resource::gpu, 1, ""}, {Resource::network, 1, ""}, {Resource::gpu, 1, ""}};
  CHECK(simulate_pipeline({chunk, chunk}, 1).makespan_s == Approx(6));
  CHECK(simulate_pipeline({chunk, chunk}, 2).makespan_s == Approx(4));
  const PipelineResult r = simulate_pipeline({chunk, chunk, chunk}, 3);
  CHECK(r.busy_s[static_cast<int>(Resource::gpu)] == Approx(6));
  CHECK(r.makespan_s >= 6);
  CHECK(simulate_pipeline({}, 3).makespan_s == 0);
}
