// The training step's allocation timeline (planner/src/cost/step_timeline.h) and its replay
// through the caching-allocator model: FSDP2's order and streams, no tensor left behind, and
// the peaks' location on a hand-worked sequence.
#include <catch2/catch.hpp>

#include "cost/step_timeline.h"
#include "test_plans.h"

using namespace muonplan;
using namespace muonplan::test;

namespace {
constexpr int64_t MiB = 1024 * 1024;

// Index of the first event for `name` (alloc or free), or -1.
int event_of(const StepTimeline& tl, const std::string& name, bool alloc) {
  for (size_t i = 0; i < tl.events.size(); ++i) {
    const TimelineEvent& e = tl.events[i];
    if (e.alloc == alloc && tl.tensors[size_t(e.tensor)].name == name) return int(i);
  }
  return -1;
}

PlanOptions tiny_workload() {
  PlanOptions o;
  o.optimizer = OptimizerKind::adamw;
  o.gpus_per_node = 1;
  o.layout = {1, 1, 1};
  o.runtime = RuntimeKind::pytorch;
  o.workload = Workload{4096, 2048, 1, true, false, 0, CpStyle::ulysses};
  return o;
}
}  // namespace

TEST_CASE("timeline replay: peaks, where they fall and what is live", "[timeline]") {
  StepTimeline tl;
  tl.phase("one");
  const int a = tl.alloc("a", "first", 12 * MiB);
  tl.free(a);
  tl.phase("two");
  tl.alloc("b", "second", 16 * MiB);
  tl.alloc("c", "second", 1000, kAllGatherStream);
  const TimelineReplay r = replay_timeline(tl, {});
  // a: its own 12 MiB segment, freed and cached; b: 16 MiB does not fit it, a new segment;
  // c: 1000 B -> 1024 B, the all-gather stream's small pool, a 2 MiB segment.
  CHECK(r.allocated.bytes == 16 * MiB + 1024);
  CHECK(r.allocated.where == "two");
  REQUIRE(r.allocated.live.size() == 1);
  CHECK(r.allocated.live[0].name == "second");
  CHECK(r.allocated.live[0].value == 16 * MiB + 1024);
  CHECK(r.allocated.live_tensors == 2);
  CHECK(r.reserved.bytes == (12 + 16 + 2) * MiB);
  CHECK(r.reserved_by_stream[0] == std::pair<int, int64_t>{kDefaultStream, 28 * MiB});
  CHECK(r.reserved_by_stream[1] == std::pair<int, int64_t>{kAllGatherStream, 2 * MiB});
}

TEST_CASE("timeline: FSDP2's order and streams, and nothing left behind", "[timeline]") {
  const PlanOptions o = tiny_workload();
  const Plan plan = plan_fixed("tiny-dense", 1, OffloadMode::none, o);
  TimelineInputs in;
  in.step_transient = plan.predicted.gpu_transient_bytes;
  const StepTimeline tl =
      build_step_timeline(model("tiny-dense"), plan.inventory, plan.options, plan.chunks, in);
  // Forward: layer 1's all-gather is issued before layer 0's output is freed (two held).
  const int ag1 = event_of(tl, "layers.1.all_gather_output", true);
  const int free0 = event_of(tl, "layers.0.all_gather_output", false);
  REQUIRE(ag1 >= 0);
  CHECK(ag1 < free0);
  for (const TimelineTensor& t : tl.tensors) {
    if (t.name.find("all_gather_output") != std::string::npos) CHECK(t.stream == kAllGatherStream);
    if (t.name.find("grad_shard") != std::string::npos) CHECK(t.stream == kReduceScatterStream);
    if (t.name.find("reduce_scatter_input") != std::string::npos) CHECK(t.stream == kDefaultStream);
  }
  // Backward: a unit's reduce-scatter input is dropped before the next unit allocates its own.
  const int rs1 = event_of(tl, "layers.1.reduce_scatter_input", true);
  const int rs1_free = event_of(tl, "layers.1.reduce_scatter_input", false);
  const int rs0 = event_of(tl, "layers.0.reduce_scatter_input", true);
  CHECK((rs1 < rs1_free && rs1_free < rs0));
  // After two steps only the parameters and the optimizer state are live: their bytes are the
  // persistent terms less the gradients (zero_grad frees them).
  std::vector<char> live(tl.tensors.size(), 0);
  for (const TimelineEvent& e : tl.events) live[size_t(e.tensor)] = e.alloc;
  double bytes = 0;
  for (size_t t = 0; t < live.size(); ++t) bytes += live[t] ? double(tl.tensors[t].bytes) : 0;
  const Prediction& p = plan.predicted;
  CHECK(bytes == term(p.gpu_persistent_bytes, "params_fp32").value +
                     term(p.gpu_persistent_bytes, "adamw_moments").value);
}

TEST_CASE("timeline: the unfused LM head's logits set the peak of a large-vocabulary step",
          "[timeline]") {
  PlanOptions o = tiny_workload();
  const Plan plan = plan_fixed("qwen3-0.6b", 1, OffloadMode::none, o);
  const Prediction& p = plan.predicted;
  // 2048 tokens x 151936 vocabulary x (2 + 4 + 4) B = 2.9 GiB of logits, far above any layer.
  CHECK(p.gpu_allocated_peak_at.find("LM head") != std::string::npos);
  CHECK(term(p.gpu_live_at_peak_bytes, "logits").value >= 2048.0 * 151936 * 10);
  CHECK(sum(p.gpu_live_at_peak_bytes) == Approx(p.gpu_allocated_bytes()).epsilon(1e-12));
}
