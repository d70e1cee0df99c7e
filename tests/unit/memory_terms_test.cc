// One memory model (issue 48 item 1): a training step's GPU allocated terms are the step
// timeline's tensors live at its allocated peak, by kind: under `pytorch` the caching allocator
// replay's peak, with the blocks' rounding; under `muonplan` the live peak of the requested bytes
// (runtime_memory.cc). Checked against a timeline built and run here, from the inputs the
// prediction without the replay leaves, for every bundled model and offload mode.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "cost/gpu_persistent.h"
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

PlanOptions training(OffloadMode mode, RuntimeKind runtime = RuntimeKind::pytorch) {
  PlanOptions o;
  o.runtime = runtime;
  // 8K tokens a sequence, two micro steps per rank on one node, full AC and a fused LM head.
  o.workload = Workload{2 * 8 * 8192, 8192, 1, true, false, 2048, CpStyle::ulysses};
  o.offload = mode;
  return o;
}

struct Case {
  std::string model, what;
  PlanOptions o;
};

// Every bundled model in every offload mode, and on two models the other paths of a training
// step (selective AC every second layer, no AC with the unfused head, AC offload, LoRA with
// fewer active runs than slots, CP and EP's all-to-all buffers), planned under `runtime`.
std::vector<Case> training_cases(RuntimeKind runtime) {
  const std::vector<std::string> models = bundled_models();
  REQUIRE(models.size() >= 10);
  std::vector<Case> cases;
  for (const std::string& name : models) {
    for (OffloadMode mode : {OffloadMode::none, OffloadMode::optimizer, OffloadMode::full})
      cases.push_back({name, "offload " + std::string(to_string(mode)), training(mode, runtime)});
  }
  for (const std::string name : {"qwen3-8b", "qwen3-30b-a3b"}) {
    const bool moe = name == "qwen3-30b-a3b";
    PlanOptions o = training(OffloadMode::none, runtime);
    Workload& w = *o.workload;
    w.ac_full = false;
    w.ac_selective = true;
    w.ac_targets = {moe ? "routed_experts" : "mlp", "attn_proj"};
    w.ac_freq = 2;
    cases.push_back({name, "selective AC, freq 2", o});
    w.ac_selective = false;
    w.ac_targets.clear();
    w.ac_freq = 1;
    w.lm_head_chunk = 0;
    cases.push_back({name, "no AC, unfused LM head", o});
    o = training(OffloadMode::optimizer, runtime);
    o.workload->ac_offload = true;
    cases.push_back({name, "AC offload", o});
    o = training(OffloadMode::none, runtime);
    o.optimizer = OptimizerKind::adamw;
    o.lora.rank = 16;
    o.lora.adapters = 2;
    o.lora.active_runs = 1;
    cases.push_back({name, "LoRA rank 16, 1 of 2 runs active", o});
    if (moe) {
      o = training(OffloadMode::none, runtime);
      o.layout = Layout{8, 2, 4};
      cases.push_back({name, "Ulysses cp 2, ep 4", o});
    }
  }
  return cases;
}

// Each case, and the same candidate predicted without the replay (the closed-form inputs of
// the timeline).
template <class Check>
void each_training_plan(RuntimeKind runtime, Check check) {
  for (const Case& c : training_cases(runtime)) {
    INFO(c.model << ", " << c.what);
    const Plan plan = plan_fixed(c.model, 1, c.o.offload, c.o);
    const Topology topo = h200();
    const Prediction before = predict(model(c.model), plan.inventory, topo, plan.options,
                                      plan.chunks, PredictParts::without_allocator_replay);
    CHECK_FALSE(before.allocator_replayed);
    check(c.model, topo, plan, before);
  }
}

}  // namespace

TEST_CASE("memory terms: the GPU allocated terms sum to the replay's allocated peak",
          "[runtime][memory_terms]") {
  each_training_plan(RuntimeKind::pytorch, [](const std::string& name, const Topology& topo,
                                              const Plan& plan, const Prediction& before) {
    const Prediction& p = plan.predicted;
    REQUIRE(p.allocator_replayed);
    const TimelineInputs in =
        step_timeline_inputs(before, RuntimeKind::pytorch, topo, plan.options, p.gpu_peak_rank);
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
    for (const auto* list : {&p.gpu_persistent_bytes, &p.gpu_transient_bytes, &p.gpu_workload_bytes,
                             &p.gpu_runtime_bytes}) {
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
  });
}

TEST_CASE("memory terms: under --runtime muonplan they sum to the timeline's live peak",
          "[runtime][memory_terms]") {
  each_training_plan(RuntimeKind::muonplan, [](const std::string& name, const Topology& topo,
                                               const Plan& plan, const Prediction& before) {
    const Prediction& p = plan.predicted;
    CHECK_FALSE(p.allocator_replayed);
    // The executor's optimizer step (its closed-form buffers) is the timeline's input.
    CHECK(before.gpu_workload_bytes.empty());  // no closed-form workload term left
    const TimelineInputs in =
        step_timeline_inputs(before, RuntimeKind::muonplan, topo, plan.options, p.gpu_peak_rank);
    CHECK_FALSE(in.adamw_foreach_temporaries);
    CHECK(in.backward_temporaries_fraction == 0);
    const StepTimeline tl =
        build_step_timeline(model(name), plan.inventory, plan.options, plan.chunks, in);
    const TimelinePeak peak = live_peak(tl);
    REQUIRE(peak.bytes > 0);
    CHECK(peak.rounding == 0);
    // To the byte, and no runtime term: the muonplan runtime has no allocator model.
    CHECK(p.gpu_allocated_bytes() == double(peak.bytes));
    CHECK(p.gpu_runtime_bytes.empty());
    CHECK(p.gpu_reserve_bytes.empty());
    // The peak is the most bytes ever live: no event of the timeline has more.
    std::vector<char> live(tl.tensors.size(), 0);
    int64_t now = 0, most = 0;
    for (const TimelineEvent& e : tl.events) {
      const size_t t = size_t(e.tensor);
      if (e.alloc != bool(live[t])) now += e.alloc ? tl.tensors[t].bytes : -tl.tensors[t].bytes;
      live[t] = e.alloc;
      most = std::max(most, now);
    }
    CHECK(most == peak.bytes);
    for (const auto* list :
         {&p.gpu_persistent_bytes, &p.gpu_transient_bytes, &p.gpu_workload_bytes}) {
      for (const Term& t : *list) {
        CHECK(t.value >= 0);
        CHECK(t.formula.find("at " + peak.where) == 0);
        CHECK(t.name != "adamw_foreach_temporaries");
        CHECK(t.name != "backward_temporaries");
      }
    }
    // The slack is on every allocated byte, the workload's included.
    CHECK(term(p.gpu_fixed_bytes, "allocator_slack").value ==
          Approx(p.gpu_allocated_bytes() * topo.overheads.allocator_slack_fraction).epsilon(1e-12));
  });
}

TEST_CASE("memory terms: without a workload they are the timeline's optimizer step",
          "[runtime][memory_terms]") {
  // Under --runtime muonplan without a workload the terms are the timeline's tensors at its live
  // peak (model init, the gradients, the optimizer step), as with one: the peak rank's shards of
  // every trained tensor at the arrays' bytes per element (gpu_persistent.h), counted here from
  // the inventory's shard rule, and the executor's step buffers (the prediction without the
  // timeline), all live in the optimizer step. step_buffers_test checks the executor allocates
  // the same on the CPU backend.
  const Topology topo = h200();
  for (const std::string& name : bundled_models()) {
    for (OffloadMode mode : {OffloadMode::none, OffloadMode::optimizer, OffloadMode::full}) {
      INFO(name << ", offload " << to_string(mode));
      PlanOptions o;
      o.runtime = RuntimeKind::muonplan;
      const Plan plan = plan_fixed(name, 1, mode, o);
      const Prediction& p = plan.predicted;
      const PlanOptions& po = plan.options;
      const OffloadPolicy& pol = offload_policy(po.offload, po.optimizer_staging);
      std::map<std::string, double> want;
      for (const ParamTensor& t : plan.inventory.tensors) {
        if (t.mtp && !po.include_mtp) continue;
        const double n =
            double(shard_rule(t, po.layout, plan.world).range(t.shape[0], p.gpu_peak_rank).size()) *
            double(t.numel() / t.shape[0]);
        for (const ElemArray& a : {param_array(po, pol), grad_array(po, pol),
                                   state_array(po, pol, t.rule == UpdateRule::muon)}) {
          if (a.bytes > 0) want[a.name] += std::ceil(n * a.bytes);
        }
      }
      std::map<std::string, double> got;
      for (const Term& t : p.gpu_persistent_bytes) {
        got[t.name] = t.value;
        CHECK(t.formula.find("at step 1: optimizer step: ") == 0);
      }
      CHECK(got == want);
      // Optimizer offload keeps the state on the host (staged whole for the step: a buffer).
      CHECK(has(p.gpu_persistent_bytes, "muon_momentum") == (mode == OffloadMode::none));
      const Prediction before = predict(model(name), plan.inventory, topo, po, plan.chunks,
                                        PredictParts::without_allocator_replay);
      CHECK(before.gpu_persistent_bytes.empty());
      REQUIRE(p.gpu_transient_bytes.size() == before.gpu_transient_bytes.size());
      for (const Term& t : before.gpu_transient_bytes) {
        CHECK(term(p.gpu_transient_bytes, t.name).value == std::ceil(t.value));
        CHECK(term(p.gpu_transient_bytes, t.name).formula ==
              "at step 1: optimizer step: " + t.formula);
      }
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
