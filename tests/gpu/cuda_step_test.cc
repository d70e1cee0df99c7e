// One rank's whole optimizer step (MuonStep over the self communicator) on the CUDA backend and
// on the CPU reference, same plan, same deterministic weights and gradients: AdamW parameters
// come out bit-identical (same per-element formula), Muon parameters' updates within about 1%
// (bf16 NS through two GEMM accumulation orders; the digest would be far too strict). Every
// offload mode, since the offloaded paths lean on the backend's pinned, asynchronous copies.
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "gpu_test_util.h"
#include "muonplan/exec/communicator.h"
#include "muonplan/exec/init.h"
#include "muonplan/exec/rank_state.h"
#include "muonplan/exec/step.h"
#include "muonplan/planner/model_io.h"
#include "test_plans.h"

using namespace muonplan;
using namespace muonplan::exec;
using namespace muonplan::exec::test;
using muonplan::test::one_rank_plan;

namespace {

// The parameters after `steps` steps, per tensor, read back wherever they live.
std::vector<std::vector<float>> run_steps(Backend& backend, const Plan& plan, int steps) {
  RankState state(plan, backend, 0);
  state.init_params();
  const std::unique_ptr<Communicator> self = make_self_communicator(backend);
  MuonStep step(state, *self);
  for (int s = 1; s <= steps; ++s) {
    state.load_grads(s);
    backend.synchronize();
    step.run(s);
  }
  backend.synchronize();
  std::vector<std::vector<float>> w;
  for (const LocalParam& p : state.params()) {
    w.emplace_back(p.elems());
    if (p.elems() > 0) state.copy_out(p, Field::param, w.back().data());
  }
  return w;
}

struct Case {
  const char* name;
  PlanOptions options;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  PlanOptions o;
  out.push_back({"defaults", o});
  o.nesterov = true;
  o.bf16_momentum = true;
  o.hyper.weight_decay = 0.1;
  out.push_back({"nesterov, bf16 momentum, wd 0.1", o});
  PlanOptions opt;
  opt.offload = OffloadMode::optimizer;
  out.push_back({"optimizer offload, whole staging", opt});
  opt.optimizer_staging = OffloadStaging::chunked;
  opt.pinned_host_state = true;
  out.push_back({"optimizer offload, chunked staging, pinned state", opt});
  PlanOptions full;
  full.offload = OffloadMode::full;
  full.hyper.weight_decay = 0.1;
  out.push_back({"full offload, wd 0.1", full});
  full.bf16_momentum = true;
  out.push_back({"full offload, bf16 momentum", full});
  return out;
}

}  // namespace

TEST_CASE("a one-rank step on cuda matches the CPU reference", "[step]") {
  Pair p;
  for (const char* model : {"tiny-moe.yaml", "tiny-dense.yaml"}) {
    for (const Case& c : cases()) {
      const Plan plan = one_rank_plan(model, c.options);
      const int steps = 3;
      const std::vector<std::vector<float>> cpu = run_steps(*p.cpu, plan, steps);
      const std::vector<std::vector<float>> gpu = run_steps(*p.cuda, plan, steps);
      REQUIRE(cpu.size() == gpu.size());
      double worst = 0;
      std::string worst_name;
      int adamw_exact = 0, adamw = 0;
      for (size_t t = 0; t < cpu.size(); ++t) {
        const ParamTensor& pt = plan.inventory.tensors[t];
        if (cpu[t].empty()) continue;
        if (pt.rule != UpdateRule::muon) {
          ++adamw;
          adamw_exact += same_bits(cpu[t], gpu[t]);
          continue;
        }
        // The update since initialization, compared as in execute's reference_rel_error.
        std::vector<float> init(cpu[t].size());
        fill_param(pt.name, 0, static_cast<int64_t>(init.size()), init.data());
        double diff = 0, norm = 0;
        for (size_t i = 0; i < init.size(); ++i) {
          const double d_cpu = double(cpu[t][i]) - init[i], d_gpu = double(gpu[t][i]) - init[i];
          diff += (d_gpu - d_cpu) * (d_gpu - d_cpu);
          norm += d_cpu * d_cpu;
        }
        const double rel = std::sqrt(diff / norm);
        if (rel > worst) {
          worst = rel;
          worst_name = pt.name;
        }
      }
      std::printf(
          "step cuda vs cpu, %s, %s: Muon update rel diff max %.4f%% (%s); AdamW %d/%d "
          "tensors bit-identical\n",
          model, c.name, 100 * worst, worst_name.c_str(), adamw_exact, adamw);
      INFO(model << ", " << c.name << ": worst " << worst_name << " " << worst);
      CHECK(worst < 0.01);
      CHECK(adamw_exact == adamw);
    }
  }
}
