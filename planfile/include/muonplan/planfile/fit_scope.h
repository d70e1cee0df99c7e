// What a plan's "fits" covers. With a workload (--tokens-per-step and --seq-len, --workload, a
// trainer config) the training step: weights, gradients, optimizer state and activations.
// Without one, the optimizer step only: activations are not counted, so a plan that fits may
// not fit once training runs. Every answer that says "fits" without a workload says so in
// these words (docs/cli-contract.md).
#pragma once

namespace muonplan {

// The plan JSON's "fit_covers".
inline const char* fit_covers(bool has_workload) {
  return has_workload ? "training step" : "optimizer step only";
}

// The qualifier of "fits" without a workload: the decision's first words, the plan's first line.
inline constexpr const char* kOptimizerStepOnly = "optimizer step only: activations not counted";

// What plans the training step instead.
inline constexpr const char* kWorkloadHint =
    "--tokens-per-step and --seq-len, or --workload, plan the training step";

}  // namespace muonplan
