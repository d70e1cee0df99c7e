// AC offload as prime-rl's trainer runs it: the copies' time and the layer inputs the step
// timeline keeps (ac_layers.h, offload_copies_on_compute_stream).
#include <catch2/catch.hpp>

#include "cost/runtime_memory.h"
#include "cost/step_timeline.h"
#include "muonplan/base/units.h"
#include "muonplan/planner/plan.h"
#include "muonplan/planner/workload.h"
#include "test_plans.h"

using namespace muonplan;
using namespace muonplan::test;

TEST_CASE("prime-rl's AC offload copies on the compute stream, one input at a time", "[workload]") {
  PlanOptions o;
  o.workload = Workload{4 * 1024 * 1024, 4096, 1, true, true};
  o.workload->ac_max_inflight = 3;  // prime-rl's config key: sizes a stream path it disables
  const Plan other = plan_fixed("qwen3-30b-a3b", 2, OffloadMode::none, o);
  o.workload->trainer = "rl";
  const Plan prime = plan_fixed("qwen3-30b-a3b", 2, OffloadMode::none, o);
  // Per rank 64 micro steps (4M tokens / (16 ranks x 4096)), each 48 layer inputs of 2 t h out
  // in forward and back in backward over pinned PCIe: all of it on the step for prime-rl.
  const Topology topo = h200();
  const double pcie = kGB * topo.calibration.pcie_efficiency;
  const double copies_s =
      64 * 48.0 * 2 * 4096 * 2048 *
      (1 / (topo.node.pcie_d2h_gbps * pcie) + 1 / (topo.node.pcie_h2d_gbps * pcie));
  CHECK(term(prime.predicted.training_terms_s, "exposed_ac_offload").value == Approx(copies_s));
  // A trainer whose offload stream overlaps compute: this step's compute hides it all.
  CHECK(term(other.predicted.training_terms_s, "exposed_ac_offload").value == 0);
  CHECK(*prime.predicted.training_step_s > *other.predicted.training_step_s);
  // Memory: prime-rl keeps no forward stash, so every layer input leaves the GPU as the next
  // layer takes over (48 per micro step come back); the other keeps the config's 3 in flight.
  auto reloaded = [&](const Plan& p) {
    const TimelineInputs in =
        step_timeline_inputs(p.predicted, p.options.runtime, topo, p.options, 0);
    const StepTimeline tl =
        build_step_timeline(model("qwen3-30b-a3b"), p.inventory, p.options, p.chunks, in, 1);
    int n = 0;
    for (const TimelineEvent& e : tl.events)
      n += e.alloc && tl.tensors[size_t(e.tensor)].name().find("(reloaded)") != std::string::npos;
    return n;
  };
  CHECK(reloaded(prime) == 2 * 48);
  CHECK(reloaded(other) == 2 * 46);
  CHECK(prime.predicted.gpu_peak_bytes() <= other.predicted.gpu_peak_bytes());
}
