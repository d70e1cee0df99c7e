// The independent reference step (reference_step.h) against MuonStep on one rank: within
// reference_rel_bound for every offload mode, momentum dtype and Nesterov setting, with the
// momentum and AdamW moments equal bit for bit; and a deliberately wrong rule in the reference
// (a logic error MuonStep and its one-rank rerun would share) exceeds the bound.
#include <catch2/catch.hpp>
#include <cstring>
#include <string>

#include "muonplan/exec/communicator.h"
#include "muonplan/exec/rank_state.h"
#include "muonplan/exec/reference_check.h"
#include "muonplan/exec/reference_step.h"
#include "muonplan/exec/step.h"
#include "test_plans.h"

using namespace muonplan;
using namespace muonplan::exec;

namespace {

constexpr int kSteps = 2;

struct Case {
  std::string model;
  OffloadMode mode;
  OffloadStaging staging;
  bool bf16_momentum, nesterov;
};

std::string describe(const Case& c) {
  return c.model + " " + to_string(c.mode) + "/" + to_string(c.staging) +
         (c.bf16_momentum ? " bf16 momentum" : " fp32 momentum") + (c.nesterov ? " nesterov" : "");
}

Plan plan_of(const Case& c, double weight_decay = 0.1) {
  PlanOptions o;
  o.offload = c.mode;
  o.optimizer_staging = c.staging;
  o.bf16_momentum = c.bf16_momentum;
  o.nesterov = c.nesterov;
  o.hyper.weight_decay = weight_decay;
  o.hyper.adamw_weight_decay = 0.01;
  return muonplan::test::one_rank_plan(c.model + ".yaml", o);
}

// Steps 1..kSteps of MuonStep on one rank and of the reference (with `fault`).
StateDiff step_and_reference(const Plan& plan, ReferenceFault fault, bool* moments_equal) {
  std::unique_ptr<Backend> backend = make_cpu_backend();
  RankState state(plan, *backend, 0);
  state.init_params();
  std::unique_ptr<Communicator> self = make_self_communicator(*backend);
  MuonStep step(state, *self);
  ReferenceStep ref(plan, fault);
  for (int s = 1; s <= kSteps; ++s) {
    state.load_grads(s);
    step.run(s);
    ref.run(s);
  }
  // The momentum and the AdamW moments depend on the gradients alone: equal bits.
  *moments_equal = true;
  for (const LocalParam& p : state.params()) {
    const ReferenceTensor& r = ref.tensor(p.tensor);
    std::vector<uint8_t> got(state.field_bytes(p, Field::momentum));
    state.copy_out(p, Field::momentum, got.data());
    const void* want = r.m_bf16.empty() ? static_cast<const void*>(r.m.data()) : r.m_bf16.data();
    *moments_equal = *moments_equal && std::memcmp(got.data(), want, got.size()) == 0;
    if (p.v) {
      std::vector<float> v(size_t(p.elems()));
      state.copy_out(p, Field::variance, v.data());
      *moments_equal = *moments_equal && v == r.v;
    }
  }
  return diff_against_reference(state, ref);
}

}  // namespace

TEST_CASE("the reference step agrees with MuonStep within the bound in every mode", "[reference]") {
  std::vector<Case> cases;
  for (bool bf16 : {false, true}) {
    for (bool nesterov : {false, true}) {
      cases.push_back({"tiny-dense", OffloadMode::none, OffloadStaging::whole, bf16, nesterov});
      cases.push_back(
          {"tiny-dense", OffloadMode::optimizer, OffloadStaging::whole, bf16, nesterov});
      cases.push_back(
          {"tiny-dense", OffloadMode::optimizer, OffloadStaging::chunked, bf16, nesterov});
    }
    cases.push_back({"tiny-dense", OffloadMode::full, OffloadStaging::whole, bf16, false});
  }
  // Expert stacks, their partitions and the router: one mode each way.
  cases.push_back({"tiny-moe", OffloadMode::none, OffloadStaging::whole, false, true});
  cases.push_back({"tiny-moe", OffloadMode::full, OffloadStaging::whole, true, false});
  // The sanitizer run (quick_run): 8 of the 16 cases (each takes about 6 s under ASan), every
  // mode and staging with both momentum dtypes and Nesterov settings among them.
  if (muonplan::test::quick_run()) {
    std::erase_if(cases, [](const Case& c) {
      if (c.model != "tiny-dense" || c.mode == OffloadMode::full) return false;
      if (c.mode == OffloadMode::none) return c.bf16_momentum || c.nesterov;
      if (c.staging == OffloadStaging::whole) return !(c.bf16_momentum && c.nesterov);
      return c.bf16_momentum == c.nesterov;
    });
  }
  const double bound = reference_rel_bound(kSteps);
  for (const Case& c : cases) {
    INFO(describe(c));
    bool moments_equal = false;
    const StateDiff d = step_and_reference(plan_of(c), ReferenceFault::none, &moments_equal);
    CHECK(d.nonfinite.empty());
    CHECK(moments_equal);
    CHECK(d.rel <= bound);
  }
}

TEST_CASE("a logic error in the step's rule exceeds the reference bound", "[reference]") {
  // Weight decay 1 makes the decay term 2% of W per step, comparable to the update.
  const Plan plan =
      plan_of({"tiny-dense", OffloadMode::none, OffloadStaging::whole, false, false}, 1.0);
  const double bound = reference_rel_bound(kSteps);
  for (ReferenceFault fault : {ReferenceFault::nesterov_inverted, ReferenceFault::scale_sqrt_min,
                               ReferenceFault::decay_twice, ReferenceFault::skip_ns_iteration}) {
    INFO("fault " << int(fault));
    bool moments_equal = false;
    const StateDiff d = step_and_reference(plan, fault, &moments_equal);
    CHECK(d.rel > 2 * bound);
  }
}
