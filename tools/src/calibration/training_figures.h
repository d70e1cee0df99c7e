// The figures a training run may measure, one row each (issue 47 item 4): its key, where a run
// keeps its measurement and how a prediction gives it. Internal to training_run.cc.
#pragma once

#include <iterator>
#include <optional>
#include <stdexcept>

#include "muonplan/base/units.h"
#include "muonplan/planner/cost_model.h"
#include "muonplan/tools/training_run.h"

namespace muonplan::training_figures {

// A figure a run may measure, and its prediction: one row each (kFigureRows, below).
enum Figure { step, post_backward, gpu_peak, host_ram, kFigures };

// Each figure's prediction from p, for run r.
inline double predicted_post_backward(const Prediction& p, const TrainingRun&) {
  for (const Term& t : p.training_terms_s) {
    if (t.name == "post_backward_optimizer" || t.name == "optimizer_step") return t.value;
  }
  return p.optimizer_step_s;
}
inline double predicted_gpu_peak(const Prediction& p, const TrainingRun& r) {
  if (!p.allocator_replayed && r.plan.options.runtime == RuntimeKind::pytorch)
    throw std::logic_error("gpu_peak_gib read from a prediction without the allocator replay");
  switch (r.gpu_peak_kind) {
    case TrainingRun::PeakKind::allocated:
      return p.gpu_allocated_bytes() / kGiB;
    case TrainingRun::PeakKind::max_memory_reserved:
      return p.gpu_reserved_bytes() / kGiB;  // the simulated allocator's segments
    default:
      return p.gpu_peak_bytes() / kGiB;
  }
}

// One row per figure: its key (in a run's `measured:` block and the fit's output), where a run
// keeps its measurement, and its prediction; in Figure's order (the static_assert checks it).
struct FigureRow {
  Figure id;
  const char* name;
  std::optional<double> TrainingRun::*measured;
  double (*predicted)(const Prediction& p, const TrainingRun& r);
};
inline constexpr FigureRow kFigureRows[] = {
    {step, "training_step_s", &TrainingRun::training_step_s,
     [](const Prediction& p, const TrainingRun&) { return p.step_s(); }},
    {post_backward, "post_backward_optimizer_s", &TrainingRun::post_backward_optimizer_s,
     predicted_post_backward},
    {gpu_peak, "gpu_peak_gib", &TrainingRun::gpu_peak_gib, predicted_gpu_peak},
    {host_ram, "host_ram_per_node_gib", &TrainingRun::host_ram_per_node_gib,
     [](const Prediction& p, const TrainingRun&) { return p.host_bytes() / kGiB; }},
};
static_assert(std::size(kFigureRows) == kFigures, "one row per figure");
constexpr bool figure_rows_in_order() {
  for (int f = 0; f < kFigures; ++f) {
    if (kFigureRows[f].id != f) return false;
  }
  return true;
}
static_assert(figure_rows_in_order(), "kFigureRows in Figure's order");

inline std::optional<double> measured(const TrainingRun& r, int f) {
  return r.*kFigureRows[f].measured;
}

// Run r's figure f from prediction p.
inline double figure(const Prediction& p, const TrainingRun& r, int f) {
  return kFigureRows[f].predicted(p, r);
}

}  // namespace muonplan::training_figures
