// Calibration from measurements (`muonplan calibrate`, docs/planner.md "Calibration"): fits the
// topology's calibratable constants (topology.h `Calibration`) so the cost model predicts the
// optimizer steps that `muonplan execute` measured.
//
// The model keeps its form; only its named constants move. Each measured run contributes its
// step time and, where the metrics have them, the busy time of the resources the planner
// models (device kernels, H2D copies, host kernels), which is what makes each constant
// identifiable: GEMM efficiency and K overhead from the NS-dominated device time, HBM from the
// elementwise kernels, link efficiency from the step time of multi-rank runs, PCIe from the
// copies, host-kernel bandwidth from the host kernels. A constant no run exercises keeps its
// value and is reported as not fitted.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "muonplan/planner/plan.h"
#include "muonplan/planner/topology.h"

namespace muonplan {

// One `muonplan execute --metrics` file and the plan it ran.
struct CalibrationRun {
  std::string name;  // the metrics file
  std::string
      plan_path;  // the plan file it names, as read (an input: calibrate --out may not be it)
  Plan plan;
  double step_s = 0;  // measured.optimizer_step_s
  // measured.busy_s, when present: backend kernels, H2D copies, host kernels.
  std::optional<double> device_s, h2d_s, host_s;
  // measured.gpu_runtime (CUDA runs): what the runtime held beside the counted bytes.
  struct GpuRuntime {
    double counted_peak_bytes = 0;        // measured.gpu_peak_gib: what alloc() counted
    double pool_reserved_high_bytes = 0;  // the memory pool's reserved high-water mark
    double device_used_bytes = 0;         // cudaMemGetInfo after the steps (0: not asked)
  };
  std::optional<GpuRuntime> gpu_runtime;
};

// Reads a metrics file (schema muonplan.metrics/2) and the plan named in its "plan" key; a
// relative or missing plan path is looked up beside the metrics file. InputError on anything
// malformed.
CalibrationRun load_calibration_run(const std::string& metrics_path);

struct FittedConstant {
  std::string name;  // the topology YAML key under `calibration`
  double before = 0, after = 0;
  bool fitted = false;
  std::string note;  // why it was not fitted, or what determined it
  // The range the fit keeps it in; hi 0: unbounded above. A fitted constant at either end (or
  // at 0) was pushed there by the runs: a sign of overfitting (overfit_warnings).
  double lo = 0, hi = 0;
};

struct RunCheck {
  std::string name;
  bool held_out = false;                             // not used in the fit
  double measured_s = 0, before_s = 0, after_s = 0;  // optimizer step: measured, predicted
  // Per resource (device, h2d, host_kernels) where measured: measured and predicted after.
  std::vector<std::tuple<std::string, double, double>> components;
  double rel_error_before() const { return before_s / measured_s - 1; }
  double rel_error_after() const { return after_s / measured_s - 1; }
};

struct CalibrationResult {
  Calibration calibration;
  // The fixed GPU costs, fitted from the runs' gpu_runtime (overheads.* in `constants`).
  Overheads overheads;
  bool overheads_fitted = false;
  std::vector<FittedConstant> constants;
  std::vector<RunCheck> runs;  // fitted runs, then held-out runs
  // The measured figures that determined the fit: each fitted run's step time, its component
  // times over the noise floor, and its gpu_runtime figures.
  int determining_figures = 0;
  // Fitted runs without measured.busy_s: each would add up to 3 determining figures.
  int fit_runs_without_busy = 0;
  // The fit's work: objective evaluations (each predicts every fitted run) and the bound its
  // inputs set on them (calibrate.cc, fit_evaluation_bound).
  int64_t fit_evaluations = 0, fit_evaluation_bound = 0;
  double max_fit_error() const;              // max |rel_error_after| over fitted runs
  double max_held_out_error() const;         // the same over held-out runs (0 when none)
  double max_held_out_error_before() const;  // max |rel_error_before| over held-out runs
};

// Signs that the fit overfits, one line each, over every entry of `constants` (whatever
// constants the fit has): a fitted constant at an end of its range or at 0, and more fitted
// constants than determining figures. Empty when none.
std::vector<std::string> overfit_warnings(const CalibrationResult& result);
// More fitted constants than determining figures: a written topology would carry constants the
// runs do not pin down (`calibrate --out` refuses it without --force).
bool underdetermined(const CalibrationResult& result);

// Fits topo.calibration to `fit`, then checks `held_out` with the result. InputError when `fit`
// is empty.
// `progress`, when given, is called about every kFitProgressS seconds of the fit with a line to
// show ("tile 3 of 6, 4200 of at most 21600 evaluations, 6 s").
constexpr double kFitProgressS = 3;
CalibrationResult calibrate(const Topology& topo, const std::vector<CalibrationRun>& fit,
                            const std::vector<CalibrationRun>& held_out,
                            const std::function<void(const std::string&)>& progress = {});

// The most objective evaluations a fit of `constants` continuous constants makes: the GEMM
// tiles tried x restarts x Nelder-Mead's evaluations per restart, each (constants + 1) x a
// fixed factor. What a fit costs is this x the fitted runs x one prediction.
int64_t fit_evaluation_bound(int constants);

// The topology's fixed GPU costs from the runs that report gpu_runtime (CUDA runs), as the
// muonplan runtime profile uses them (docs/planner.md, "Calibration"): the allocator slack is
// the pool's reserved high-water mark over the counted peak, less 1; the per-GPU overhead
// outside the allocator (context, cuBLAS workspaces, NCCL buffers) is the device's used memory
// less the pool's reserved mark. The largest over the runs, so no run is under-predicted. Adds
// an `overheads.*` entry per constant to `constants`, fitted or kept with the reason.
void fit_overheads(const Overheads& before, const std::vector<CalibrationRun>& runs,
                   CalibrationResult& result);

// The predicted optimizer-step seconds of a run's plan on `topo` (workload terms dropped).
double predict_step_s(const Topology& topo, const CalibrationRun& run);

// The topology file's text with its `calibration:` block replaced by `c` (appended when it has
// none), everything else as written, and `comment` on the line before the block.
std::string with_calibration(const std::string& topology_yaml, const Calibration& c,
                             const std::string& comment);

}  // namespace muonplan
