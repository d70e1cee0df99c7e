// The offload pipelines on one process (docs/muon-step.md section 5): `optimizer` offload computes
// the bits of `none`; `full` differs from `none` only by the bf16 rounding of the update that
// travels back to the host; state lives where the mode says.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "muonplan/exec/communicator.h"
#include "muonplan/exec/cpu_async_backend.h"
#include "muonplan/exec/rank_state.h"
#include "muonplan/exec/step.h"
#include "muonplan/planner/model_io.h"
#include "test_plans.h"

using namespace muonplan;
using namespace muonplan::exec;

namespace {

// The one-rank plan of models/MODEL with this offload mode and momentum dtype, weight decay on.
Plan one_rank_plan(const std::string& model, OffloadMode mode, bool bf16_momentum,
                   OffloadStaging staging = OffloadStaging::whole) {
  PlanOptions o;
  o.offload = mode;
  o.optimizer_staging = staging;
  o.bf16_momentum = bf16_momentum;
  o.hyper.weight_decay = 0.1;
  return muonplan::test::one_rank_plan(model, o);
}

std::vector<uint8_t> field(const RankState& s, const LocalParam& p, Field f) {
  std::vector<uint8_t> out(s.field_bytes(p, f));
  s.copy_out(p, f, out.data());
  return out;
}

std::vector<float> params(const RankState& s, const LocalParam& p) {
  std::vector<float> out(p.elems());
  s.copy_out(p, Field::param, out.data());
  return out;
}

// Runs steps 1..n of the plan from the deterministic initial state.
void run_steps(RankState& s, int n) {
  std::unique_ptr<Communicator> self = make_self_communicator(s.backend());
  MuonStep step(s, *self);
  for (int k = 1; k <= n; ++k) {
    s.load_grads(k);
    step.run(k);
  }
}

// Copies every array of `from` into `to` (same tensors, any offload mode).
void copy_state(const RankState& from, RankState& to) {
  for (size_t i = 0; i < from.params().size(); ++i) {
    const LocalParam& a = from.params()[i];
    LocalParam& b = to.params()[i];
    for (Field f : {Field::param, Field::grad, Field::momentum, Field::variance}) {
      to.copy_in(b, f, field(from, a, f).data());
    }
  }
}

}  // namespace

TEST_CASE("optimizer offload computes the bits of none, staged whole or by chunk", "[offload]") {
  for (const char* model : {"tiny-dense.yaml", "tiny-moe.yaml"}) {
    for (bool bf16m : {false, true}) {
      INFO(model << " bf16 momentum " << bf16m);
      std::unique_ptr<Backend> backend = make_cpu_backend();
      const Plan pn = one_rank_plan(model, OffloadMode::none, bf16m);
      const Plan pw = one_rank_plan(model, OffloadMode::optimizer, bf16m);
      const Plan pc = one_rank_plan(model, OffloadMode::optimizer, bf16m, OffloadStaging::chunked);
      RankState none(pn, *backend, 0), whole(pw, *backend, 0), chunked(pc, *backend, 0);
      for (RankState* s : {&none, &whole, &chunked}) {
        s->init_params();
        run_steps(*s, 3);
      }
      for (size_t i = 0; i < none.params().size(); ++i) {
        for (Field f : {Field::param, Field::momentum, Field::variance}) {
          const std::vector<uint8_t> ref = field(none, none.params()[i], f);
          CHECK(field(whole, whole.params()[i], f) == ref);
          CHECK(field(chunked, chunked.params()[i], f) == ref);
        }
      }
    }
  }
}

TEST_CASE("full offload differs from none only by the bf16 rounding of the gradients and update",
          "[offload]") {
  for (const char* model : {"tiny-dense.yaml", "tiny-moe.yaml"}) {
    for (bool bf16m : {false, true}) {
      INFO(model << " bf16 momentum " << bf16m);
      std::unique_ptr<Backend> backend = make_cpu_backend();
      const Plan pn = one_rank_plan(model, OffloadMode::none, bf16m);
      const Plan pf = one_rank_plan(model, OffloadMode::full, bf16m);
      // Two steps under none, then step 3 from that state under each mode.
      RankState before(pn, *backend, 0), none(pn, *backend, 0), full(pf, *backend, 0);
      before.init_params();
      run_steps(before, 2);
      copy_state(before, none);
      copy_state(before, full);
      for (RankState* s : {&none, &full}) {
        std::unique_ptr<Communicator> self = make_self_communicator(*backend);
        MuonStep step(*s, *self);
        s->load_grads(3);
        // Backward leaves bf16 gradients under full offload (RankState::load_grads): none gets
        // the same values, so that only the update's rounding is left to differ.
        if (s == &none) {
          for (LocalParam& p : none.params()) {
            if (p.elems() == 0) continue;
            std::vector<float> g(p.elems());
            none.copy_out(p, Field::grad, g.data());
            for (float& x : g) x = to_float(to_bf16(x));
            none.copy_in(p, Field::grad, g.data());
          }
        }
        step.run(3);
      }
      double worst = 0;
      int muon_differs = 0;
      for (size_t i = 0; i < none.params().size(); ++i) {
        const LocalParam& pn_ = none.params()[i];
        const LocalParam& pf_ = full.params()[i];
        if (pn_.elems() == 0) continue;
        // The momentum fold and AdamW are the same formulas on host and device: exact.
        CHECK(field(full, pf_, Field::momentum) == field(none, pn_, Field::momentum));
        CHECK(field(full, pf_, Field::variance) == field(none, pn_, Field::variance));
        const std::vector<float> w0 = params(before, before.params()[i]);
        const std::vector<float> wn = params(none, pn_), wf = params(full, pf_);
        if (!pn_.muon) {
          CHECK(wf == wn);
          continue;
        }
        double num = 0, den = 0;
        for (size_t k = 0; k < w0.size(); ++k) {
          const double dn = double(wn[k]) - w0[k], df = double(wf[k]) - w0[k];
          num += (df - dn) * (df - dn);
          den += dn * dn;
        }
        REQUIRE(den > 0);
        worst = std::max(worst, std::sqrt(num / den));
        muon_differs += num > 0;
        // The device holds bf16 of the new master.
        std::vector<bf16> compute(pf_.elems());
        backend->copy_to_host(compute.data(), pf_.w_compute, compute.size() * sizeof(bf16));
        size_t stale = 0;
        for (size_t k = 0; k < compute.size(); ++k) stale += compute[k].bits != to_bf16(wf[k]).bits;
        CHECK(stale == 0);
      }
      // Below the 0.5% of the issue, and not zero: the rounding really happens.
      CHECK(worst < 0.005);
      CHECK(worst > 0);
      CHECK(muon_differs > 0);
    }
  }
}

TEST_CASE("state lives where the offload mode says", "[offload]") {
  for (OffloadMode mode : {OffloadMode::none, OffloadMode::optimizer, OffloadMode::full}) {
    std::unique_ptr<Backend> backend = make_cpu_backend();
    const Plan p = one_rank_plan("tiny-moe.yaml", mode, true);
    RankState s(p, *backend, 0);
    size_t master = 0, state = 0, compute = 0;
    for (const LocalParam& lp : s.params()) {
      const size_t n = static_cast<size_t>(lp.elems());
      master += 8 * n;                                   // fp32 w and g
      state += (lp.muon ? 2 : 8) * n;                    // bf16 momentum; AdamW m and v
      compute += mode == OffloadMode::full ? 4 * n : 0;  // bf16 compute weights and grads
    }
    const size_t host = backend->host_memory().current_bytes;
    const size_t device = backend->memory().current_bytes;
    INFO(to_string(mode));
    switch (mode) {
      case OffloadMode::none:
        CHECK(host == 0);
        CHECK(device == master + state);
        break;
      case OffloadMode::optimizer:
        CHECK(host == state);
        CHECK(device == master);
        break;
      case OffloadMode::full:
        CHECK(host == master + state);
        CHECK(device == compute);
        break;
    }
  }
}

TEST_CASE("Nesterov is refused under full offload", "[offload]") {
  std::unique_ptr<Backend> backend = make_cpu_backend();
  Plan p = one_rank_plan("tiny-dense.yaml", OffloadMode::full, false);
  p.options.nesterov = true;
  RankState s(p, *backend, 0);
  std::unique_ptr<Communicator> self = make_self_communicator(*backend);
  CHECK_THROWS_WITH(MuonStep(s, *self), Catch::Contains("Nesterov") && Catch::Contains("full"));
}

// The planner rates a mode's PCIe copies as pinned (full offload; optimizer offload with
// --pinned-state) or pageable (optimizer offload without it): the step's copies go through
// memory of that kind. The asynchronous-lanes backend counts the bytes whose host side is not
// from alloc_host.
TEST_CASE("a step's copies use pinned memory where the plan rates PCIe as pinned", "[offload]") {
  for (const char* model : {"tiny-dense.yaml", "tiny-moe.yaml"}) {
    for (int mode = 0; mode < 3; ++mode) {
      PlanOptions o;
      o.offload = mode == 0 ? OffloadMode::full : OffloadMode::optimizer;
      o.pinned_host_state = mode == 1;
      INFO(model << " mode " << mode);
      int64_t pageable = 0;
      CpuAsyncOptions a;
      a.pageable_copy_bytes = &pageable;
      std::unique_ptr<Backend> backend = make_cpu_async_backend(a);
      const Plan plan = muonplan::test::one_rank_plan(model, o);
      RankState s(plan, *backend, 0);
      s.init_params();
      std::unique_ptr<Communicator> self = make_self_communicator(*backend);
      MuonStep step(s, *self);
      for (int k = 1; k <= 2; ++k) {
        s.load_grads(k);  // outside the step: through pageable memory
        pageable = 0;
        step.run(k);
        const StepCounters& c = step.counters();
        REQUIRE(c.h2d_bytes + c.d2h_bytes > 0);
        if (mode == 2) {
          CHECK(pageable == int64_t(c.h2d_bytes + c.d2h_bytes));  // the state, both ways
        } else {
          CHECK(pageable == 0);
        }
      }
    }
  }
}
