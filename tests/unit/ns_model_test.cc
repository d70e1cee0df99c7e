// The Newton-Schulz cost model: FLOPs per iteration and the time of a schedule.
#include <catch2/catch.hpp>

#include "muonplan/planner/ns_model.h"
#include "test_plans.h"

using namespace muonplan;
using test::h200;

TEST_CASE("NS FLOPs: 4 m^2 n + 2 m^3 per iteration, m the smaller side", "[ns_model]") {
  // By hand for a 768 x 2048 matrix: X X^T is 2 x 768^2 x 2048 = 2,415,919,104 FLOPs, B = bA +
  // cA^2 2 x 768^3 = 905,969,664, B X 2,415,919,104: 5,737,807,872 an iteration.
  CHECK(ns_flops(768, 2048, 5) == 5 * 5'737'807'872.0);
  CHECK(ns_flops(2048, 768, 5) == 5 * 5'737'807'872.0);  // the smaller side is m
  // The symmetric variant computes one triangle of X X^T and A^2: 1,207,959,552 + 452,984,832
  // + 2,415,919,104.
  CHECK(ns_flops(768, 2048, 1, true) == 4'076'863'488.0);
  const NsCost c = ns_cost(h200(), 16, 1408, 4096, ns_schedule("quintic"));
  // By hand: 4 x 1408^2 x 4096 + 2 x 1408^3 = 32,480,690,176 + 5,582,618,624 an iteration, 5
  // iterations, 16 matrices.
  CHECK(c.flops == 16.0 * 5 * 38'063'308'800.0);
  CHECK(c.total_s == Approx(c.normalize_s + c.gemm_s));
  // deepseek-v4 runs 10 iterations: about twice a 5-step schedule.
  const NsCost v4 = ns_cost(h200(), 16, 1408, 4096, ns_schedule("deepseek-v4"));
  CHECK(v4.total_s / c.total_s == Approx(2.0).epsilon(0.05));
}
