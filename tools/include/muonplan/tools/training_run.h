// `muonplan calibrate --training-run FILE.yaml` (docs/planner.md, "Calibration from a training
// run"): one measured step of a real trainer, the plan it ran, and the fit of the training-step
// and runtime constants to every run given, by bounded least squares.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "muonplan/planner/model_spec.h"
#include "muonplan/planner/plan.h"

namespace muonplan {

struct TrainingRun {
  std::string name;  // the file
  // The files it names, as read: the model (resolved) and the trainer config, if any.
  std::string model_path, trainer_config_path;
  ModelSpec spec;
  Plan plan;  // planned at the run's nodes, layout, offload and workload
  // measured: what the file gives
  std::optional<double> training_step_s, gpu_peak_gib, host_ram_per_node_gib,
      post_backward_optimizer_s;
  // gpu_peak_kind: what the measured peak counts. reserved: all the process holds on the
  // device (the allocator's segments, the CUDA context, NCCL's buffers); max_memory_reserved:
  // torch.cuda.max_memory_reserved(), the allocator's segments only; allocated: its live bytes.
  enum class PeakKind { reserved, max_memory_reserved, allocated };
  PeakKind gpu_peak_kind = PeakKind::reserved;
  std::string skipped;  // why it cannot be planned here (another topology); "": planned
  // measured.oom: the run died with torch.OutOfMemoryError, so the plan must not fit.
  bool oom = false;
  double compute_capability = 0;  // the topology's GPU, which resolves attention `auto`
};

// The topology a run file names (`topology:`, a bundled name or a path beside the file), or ""
// when it names none.
std::string training_run_topology(const std::string& path);
// Why a run whose file names topology `t` cannot be fitted on `topo`, or "": matched by what
// `t` loads to (its name), not by its spelling (run_topology.cc).
std::string topology_skip_reason(const std::string& t, const Topology& topo,
                                 const std::string& run_path);

// One run planned on its own topology, beside what was measured (`muonplan validate
// --training-run`): no constant is fitted. Tolerances are relative (0.15: 15%).
struct TrainingRunCheck {
  std::string run, topology, setting;
  std::optional<double> measured_step_s, predicted_step_s;
  std::optional<double> measured_gpu_gib, predicted_gpu_gib;  // of the run's gpu_peak_kind
  bool oom = false;                                           // measured
  bool fits_card = false;      // predicted: the GPU peak fits the card (no headroom)
  bool fits_headroom = false;  // predicted: fits with the plan's headroom (Prediction::fits)
  double gpu_peak_gib = 0, gpu_limit_gib = 0;
  double predicted_between_steps_s = 0;  // outside the step's clock (Prediction::between_steps_s)
  // The verdict is right: an OOM run does not fit the card; a run that ran fits it.
  bool verdict_right() const { return oom ? !fits_card : fits_card; }
  const char* verdict() const { return fits_headroom ? "fits" : fits_card ? "tight" : "no fit"; }
};
TrainingRunCheck check_training_run(const TrainingRun& r, const Topology& topo);

// Reads FILE: `model:` (a name in models/ or a path beside FILE), then either `trainer_config:`
// (a TOML, read by today's trainer-config reader) or `nodes:`, `layout:`, `offload:`,
// `optimizer:`, `workload:` {tokens_per_step, seq_len, micro_batch_seqs, ac, ac_offload,
// lm_head_chunk, cp_style}; `runtime:` (default pytorch); `measured:` {training_step_s,
// gpu_peak_gib, gpu_peak_kind, host_ram_per_node_gib, post_backward_optimizer_s}. `topology`
// is the one being calibrated. InputError "FILE:LINE:COL: field: ..." on anything malformed.
TrainingRun load_training_run(const std::string& path, const Topology& topology);

// One measured figure and its prediction before and after the fit.
struct Residual {
  std::string run, figure;
  double measured = 0, before = 0, after = 0;
  bool held_out = false;
  double rel_error_before() const { return before / measured - 1; }
  double rel_error_after() const { return after / measured - 1; }
};

struct TrainingConstant {
  std::string name;  // calibration.KEY or pytorch.KEY, as the topology YAML spells it
  double before = 0, after = 0;
  bool fitted = false;
  std::string note;  // what determined it, or why it stayed at its default
};

struct TrainingFit {
  Topology topology;  // with the fitted constants
  std::vector<TrainingConstant> constants;
  std::vector<Residual> residuals;  // fitted runs' figures, then the held-out runs'
};

// Fits the constants the measured figures determine (at most one per figure, in order of what
// each figure is most sensitive to; a constant some runs only move, as an attention kernel's
// efficiency, from those runs), within physical bounds, minimizing the sum of squared log
// errors over every figure of every run in `fit`; then predicts `check` with the result. A
// constant that only one run determines stays at its value unless `force`.
TrainingFit fit_training_runs(const Topology& topo, const std::vector<TrainingRun>& fit,
                              const std::vector<TrainingRun>& check, bool force = false);

// What the fit relies on, for tests/unit/training_fit_test.cc to check: each constant it may
// fit, with its bounds and the figures it moves (every other figure stays bit-identical when it
// moves, so its search leaves them out, and the allocator replay with gpu_peak_gib); and run r's
// figures under topo, by name, without the replay (and without gpu_peak_gib) when !replay.
struct FitConstant {
  std::string name;
  double lo = 0, hi = 0;
  std::vector<std::string> moves;
  double& (*field)(Topology&) = nullptr;
};
std::vector<FitConstant> fit_constants();
std::map<std::string, double> predicted_figures(const Topology& topo, const TrainingRun& r,
                                                bool replay = true);

// The topology YAML with each fitted constant's value replaced in its section (added when
// missing), everything else as written.
std::string with_training_constants(const std::string& yaml, const TrainingFit& fit,
                                    const std::string& comment);

// The topology YAML with each "section.key" of `values` replaced in its section (added when
// missing; the section too), `comment` after each value written, everything else as written.
std::string with_section_constants(const std::string& yaml,
                                   const std::map<std::string, double>& values,
                                   const std::string& comment);

}  // namespace muonplan
