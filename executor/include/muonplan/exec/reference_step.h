// An independent reference of the optimizer step: unsharded Muon and AdamW over whole tensors on
// one process, written from docs/muon-step.md alone. It shares no code with MuonStep (step.cc),
// newton_schulz.cc, RankState or the plan's shards and chunks: only the per-element formulas
// (optimizer_formulas.h), bf16 rounding (bf16.h), the synthetic data (init.h) and OpenBLAS's
// sgemm. So a logic error of the step that its one-rank rerun shares (both are MuonStep) shows
// as a difference here; `execute --check-reference` compares the sharded state with both
// (docs/executor-numerics.md, "The independent reference").
#pragma once

#include <cstdint>
#include <vector>

#include "muonplan/exec/bf16.h"
#include "muonplan/planfile/plan_file.h"

namespace muonplan::exec {

// Deliberate departures from docs/muon-step.md, for tests only: each is a logic error the
// comparison with the reference must catch (tests/exec_step/reference_step_test.cc).
enum class ReferenceFault {
  none,
  nesterov_inverted,  // Nesterov on where the plan has it off, and off where on
  scale_sqrt_min,     // s = lr * update_rms * sqrt(min(rows, cols)) instead of max
  decay_twice,        // the decoupled weight decay applied twice per step
  skip_ns_iteration,  // the schedule's last NS iteration left out
};

// One tensor's whole state, row-major as the checkpoint stores it.
struct ReferenceTensor {
  std::vector<float> w;      // fp32 master
  std::vector<float> m;      // Muon fp32 momentum, or AdamW's first moment
  std::vector<bf16> m_bf16;  // Muon bf16 momentum (bf16_momentum)
  std::vector<float> v;      // AdamW's second moment
};

// The largest relative difference allowed between the step and the reference after `steps`
// steps, for a tensor's change since initialization and for its optimizer state (derivation and
// measurements: docs/executor-numerics.md, "The independent reference").
double reference_rel_bound(int64_t steps);

class ReferenceStep {
 public:
  // The initial state of every tensor of the plan's inventory: fill_param's weights, zero
  // moments. Sets OpenBLAS to one thread (its bits must not depend on the machine) until
  // destroyed.
  explicit ReferenceStep(const Plan& plan, ReferenceFault fault = ReferenceFault::none);
  ~ReferenceStep();
  ReferenceStep(const ReferenceStep&) = delete;
  ReferenceStep& operator=(const ReferenceStep&) = delete;

  // Optimizer step `step` (>= 1; AdamW's bias correction uses it) on fill_grad's gradients.
  void run(int64_t step);
  const ReferenceTensor& tensor(int index) const { return tensors_[size_t(index)]; }

 private:
  void muon(const ParamTensor& t, const std::vector<float>& g, ReferenceTensor& s);
  void adamw(const std::vector<float>& g, ReferenceTensor& s, int64_t step) const;
  // NS of one bf16 matrix [rows, cols], in place (docs/muon-step.md section 3).
  void newton_schulz(std::vector<bf16>& u, int64_t rows, int64_t cols) const;

  // Newton-Schulz's fp32 operands, kept from matrix to matrix: fresh vectors per matrix were
  // fresh pages each time (under ASan, page faults were a quarter of the reference's time).
  struct NsScratch {
    std::vector<float> x, a, b, next;
  };

  const Plan& plan_;
  ReferenceFault fault_;
  mutable NsScratch ns_;
  int openblas_threads_ = 1;  // restored by the destructor
  std::vector<ReferenceTensor> tensors_;
};

}  // namespace muonplan::exec
