// What a plan predicts: every figure a sum of named terms (docs/planner.md), and the optimizer
// step's simulated schedule. Plan-file data: the cost model (cost_model.h) computes it, the plan
// file and the report print it, and the executor's stages use its resource names.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace muonplan {

struct Term {
  std::string name;
  double value = 0;     // bytes or seconds, as the list it sits in says
  std::string formula;  // how it was computed, in words a user can check
};

double sum(const std::vector<Term>& terms);

// A chunk's timed stages; resources run one stage at a time, chunks in flight overlap.
enum class Resource { gpu, network, pcie_h2d, pcie_d2h, cpu };
// How many there are: the simulator's and the trace's tracks (Resource(0) .. Resource(n - 1)).
inline constexpr int kResourceCount = int(Resource::cpu) + 1;
const char* to_string(Resource r);
// When a stage can run in a training step: in the optimizer step after backward, during
// backward (full offload: gradients to the host, the host fold and host updates), or as the
// weight upload of host-updated params after backward.
enum class StagePhase { optimizer, backward, weight_upload };
struct Stage {
  Resource resource;
  double seconds = 0;
  std::string what;
  StagePhase phase = StagePhase::optimizer;
};

// When the simulator ran one stage: the schedule a trace draws (trace.h).
struct StageSpan {
  int chunk = 0;  // index into the chunk list
  int stage = 0;  // index into the chunk's stages
  Resource resource = Resource::gpu;
  std::string what;  // the stage's name (Stage::what)
  double start_s = 0, end_s = 0;
};

struct Prediction {
  // Per GPU, busiest rank: the rank the GPU terms are for.
  int gpu_peak_rank = 0;
  std::vector<Term> gpu_persistent_bytes;
  std::vector<Term> gpu_transient_bytes;
  std::vector<Term> gpu_fixed_bytes;
  std::vector<Term> gpu_workload_bytes;  // with a workload only
  // Runtime profile `pytorch` (docs/planner.md, "Runtime"): what the runtime allocates beside
  // the model's tensors, and what the caching allocator reserves beyond what is allocated.
  // gpu_fixed_bytes are outside the allocator (CUDA context, NCCL buffers).
  std::vector<Term> gpu_runtime_bytes;
  std::vector<Term> gpu_reserve_bytes;
  // Runtime `pytorch`: where in the step the simulated allocator's peaks fall (docs/planner.md,
  // "The allocation timeline") and the tensors live at the allocated peak, summed by kind.
  std::string gpu_allocated_peak_at, gpu_reserved_peak_at;
  std::vector<Term> gpu_live_at_peak_bytes;
  // Whether those come from a replay: false under runtime `muonplan` (no caching allocator), and
  // for a prediction made without it (PredictParts, cost_model.h), whose GPU figures are partial.
  bool allocator_replayed = false;
  // Per node, busiest node.
  std::vector<Term> host_bytes_per_node;
  // Per GPU per step.
  double alltoall_bytes_per_rank_max = 0;
  double h2d_bytes_per_gpu = 0;
  double d2h_bytes_per_gpu = 0;
  std::vector<Term> comm_bytes;  // named traffic per GPU per step (all-to-all, H2D, D2H, FSDP)
  // Optimizer step: per-resource busy time and the pipelined total.
  std::vector<Term> step_phases_s;
  double optimizer_step_s = 0;
  // The optimizer step's schedule as simulated (after the whole-state H2D when staged whole).
  std::vector<StageSpan> schedule;
  std::optional<double> training_step_s;
  std::vector<Term> training_terms_s;  // their sum is training_step_s
  // Where the step's fitted constants come from (the topology's step_time_calibrated_on); ""
  // with a workload: uncalibrated on this GPU kind.
  std::string step_time_calibration;
  std::vector<Term> training_hidden_s;  // work that runs under compute (not in the sum)
  // The trainer's work between two training steps, outside training_step_s (prime-rl's
  // `time/step` leaves it out): a loop iteration takes training_step_s + their sum.
  std::vector<Term> between_steps_s;
  // Limits in force.
  double gpu_limit_bytes = 0;
  double host_limit_bytes = 0;
  // Fractions of the limits the fit decision keeps free (PlanOptions::gpu_headroom_or).
  double gpu_headroom = 0;
  double host_headroom = 0;

  double gpu_allocated_bytes() const;  // persistent + transient + workload + runtime
  double gpu_reserved_bytes() const;   // allocated + reserve
  double gpu_peak_bytes() const;       // reserved + outside the allocator (gpu_fixed_bytes)
  double gpu_transient_bytes_total() const { return sum(gpu_transient_bytes); }
  double host_bytes() const { return sum(host_bytes_per_node); }
  // Peak and host RAM against the limits less their headroom.
  bool fits() const;
  // fits: within the headroom; tight: within the limits, not the headroom (a run measured at
  // 95-97% of the card runs); does_not_fit: past a limit.
  enum class Verdict { fits, tight, does_not_fit };
  Verdict fit_verdict() const;
  // Bytes of the GPU's headroom the peak uses (0 when it fits within the headroom).
  double gpu_headroom_used_bytes() const;
  // How far the tighter of the two is from its usable limit: 1 - used / (limit x (1 -
  // headroom)). Positive: fits by that fraction; negative: misses by it.
  double fit_margin() const;
  double step_s() const { return training_step_s.value_or(optimizer_step_s); }
};
const char* to_string(Prediction::Verdict v);  // "fits", "tight", "does_not_fit"

}  // namespace muonplan
