// One memory model (issue 48 item 1): under the `pytorch` runtime the GPU allocated terms are the
// step timeline's tensors live at the replay's allocated peak, by kind, and the blocks'
// rounding (runtime_memory.cc). Checked against a replay run here, from the inputs the
// prediction without the replay leaves, for every bundled model and offload mode.
#include <catch2/catch.hpp>

#include <filesystem>
#include <set>

#include "cost/runtime_memory.h"
#include "muonplan/planner/cost_model.h"
#include "test_plans.h"

using namespace muonplan;
using namespace muonplan::test;

namespace {

std::vector<std::string> bundled_models() {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(repo_path("models"))) {
    if (e.path().extension() == ".yaml") names.insert(e.path().stem().string());
  }
  return {names.begin(), names.end()};
}

PlanOptions training(OffloadMode mode) {
  PlanOptions o;
  o.runtime = RuntimeKind::pytorch;
  // 8K tokens a sequence, two micro steps per rank on one node, full AC and a fused LM head.
  o.workload = Workload{2 * 8 * 8192, 8192, 1, true, false, 2048, CpStyle::ulysses};
  o.offload = mode;
  return o;
}

}  // namespace

TEST_CASE("memory terms: the GPU allocated terms sum to the replay's allocated peak",
          "[runtime][memory_terms]") {
  const std::vector<std::string> models = bundled_models();
  REQUIRE(models.size() >= 10);
  const Topology topo = h200();
  for (const std::string& name : models) {
    for (OffloadMode mode : {OffloadMode::none, OffloadMode::optimizer, OffloadMode::full}) {
      INFO(name << ", offload " << to_string(mode));
      const Plan plan = plan_fixed(name, 1, mode, training(mode));
      const Prediction& p = plan.predicted;
      REQUIRE(p.allocator_replayed);
      // The same candidate without the replay: the closed-form inputs of the timeline.
      const Prediction before = predict(model(name), plan.inventory, topo, plan.options,
                                        plan.chunks, PredictParts::without_allocator_replay);
      CHECK_FALSE(before.allocator_replayed);
      const TimelineInputs in = step_timeline_inputs(before, topo, plan.options, p.gpu_peak_rank);
      const TimelineReplay r = replay_timeline(
          build_step_timeline(model(name), plan.inventory, plan.options, plan.chunks, in),
          step_allocator_config(before, plan.options, topo.pytorch));
      REQUIRE(r.allocated.bytes > 0);
      // To the byte: every term is a whole number of bytes.
      CHECK(p.gpu_allocated_bytes() == double(r.allocated.bytes));
      CHECK(p.gpu_reserved_bytes() == double(r.reserved.bytes));
      // No leftover term; the rounding is named, and it is what the blocks add.
      CHECK_FALSE(has(p.gpu_runtime_bytes, "allocation_timeline"));
      CHECK(term(p.gpu_runtime_bytes, "allocator_block_rounding").value ==
            double(r.allocated.rounding));
      double blocks = 0;
      for (const Term& t : r.allocated.live) blocks += t.value;
      CHECK(blocks == double(r.allocated.bytes));
      // Each term is one kind of the timeline's, with where it was live.
      for (const auto* list : {&p.gpu_persistent_bytes, &p.gpu_transient_bytes,
                               &p.gpu_workload_bytes, &p.gpu_runtime_bytes}) {
        for (const Term& t : *list) {
          CHECK(t.value >= 0);
          CHECK(t.formula.find("at " + p.gpu_allocated_peak_at) == 0);
        }
      }
      // The parameters are live throughout the step.
      double params = 0;
      for (const Term& t : p.gpu_persistent_bytes)
        params += t.name.rfind("params_", 0) == 0 ? t.value : 0;
      CHECK(params > 0);
    }
  }
}

TEST_CASE("memory terms: each kind goes in one list", "[runtime][memory_terms]") {
  TimelineInputs in;
  in.step_transient = {{"step_buffers", 1, ""}, {"staged_optimizer_state", 1, ""}};
  CHECK(timeline_term_list("params_fp32", in) == TimelineTermList::persistent);
  CHECK(timeline_term_list("grads_fp32", in) == TimelineTermList::persistent);
  CHECK(timeline_term_list("adamw_moments", in) == TimelineTermList::persistent);
  CHECK(timeline_term_list("staged_optimizer_state", in) == TimelineTermList::transient);
  CHECK(timeline_term_list("adamw_foreach_temporaries", in) == TimelineTermList::transient);
  CHECK(timeline_term_list("cublas_workspace", in) == TimelineTermList::runtime);
  CHECK(timeline_term_list("grads_bf16_in_flight", in) == TimelineTermList::workload);
  CHECK(timeline_term_list("lm_head_chunk_logits", in) == TimelineTermList::workload);
}
