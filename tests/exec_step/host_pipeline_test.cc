// Full offload's host pipeline (executor/src/step/host_pipeline.h) is chosen once from the
// offload policy: present for `full` only, and refused for a policy that would split it.
#include "step/host_pipeline.h"

#include <catch2/catch.hpp>

#include "muonplan/exec/timed_backend.h"
#include "test_plans.h"

using namespace muonplan;
using namespace muonplan::exec;

TEST_CASE("the host pipeline comes with full offload only, all of its passes together",
          "[offload]") {
  const std::unique_ptr<Backend> backend = make_cpu_backend(CpuGemm::openblas);
  PlanOptions o;
  o.offload = OffloadMode::full;
  const Plan p = muonplan::test::one_rank_plan("tiny-dense.yaml", o);
  RankState s(p, *backend, 0);
  StepCounters counters;
  StepTrace trace(p, *backend);
  const auto pipeline = [&](const OffloadPolicy& policy) {
    return HostPipeline::for_policy(policy, s, *backend, counters, trace);
  };
  CHECK(pipeline(offload_policy(OffloadMode::full)) != nullptr);
  CHECK(pipeline(offload_policy(OffloadMode::none)) == nullptr);
  CHECK(pipeline(offload_policy(OffloadMode::optimizer, OffloadStaging::chunked)) == nullptr);
  OffloadPolicy split = offload_policy(OffloadMode::full);
  split.host_adamw = false;  // AdamW on the device while the master lives on the host
  CHECK_THROWS_WITH(pipeline(split), Catch::Contains("together"));
  split = offload_policy(OffloadMode::none);
  split.host_fold = true;
  CHECK_THROWS_AS(pipeline(split), std::invalid_argument);
}

TEST_CASE("a lane's host staging grows to the largest request and keeps it", "[offload]") {
  const std::unique_ptr<Backend> backend = make_cpu_backend(CpuGemm::openblas);
  PlanOptions o;
  o.offload = OffloadMode::full;
  const Plan p = muonplan::test::one_rank_plan("tiny-dense.yaml", o);
  RankState s(p, *backend, 0);
  StepCounters counters;
  StepTrace trace(p, *backend);
  const size_t before = backend->host_memory().current_bytes;
  {
    HostPipeline h(s, *backend, counters, trace);
    const HostPipeline::Staging a = h.staging(1, 100);
    CHECK(backend->host_memory().current_bytes == before + 3 * 100 * sizeof(bf16));
    const HostPipeline::Staging b = h.staging(1, 50);  // fits: the same buffers
    CHECK(b.momentum == a.momentum);
    CHECK(b.weights == a.weights);
    h.staging(1, 300);
    h.staging(2, 10);
    CHECK(backend->host_memory().current_bytes == before + 3 * (300 + 10) * sizeof(bf16));
  }
  CHECK(backend->host_memory().current_bytes == before);  // freed with the pipeline
}
