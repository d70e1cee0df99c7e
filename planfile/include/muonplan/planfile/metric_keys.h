#pragma once
// The names of the figures a plan predicts and a run measures, one table for both sides:
// plan.json's `predicted` (plan_json.cc), the `predicted` execute copies into metrics.json
// (read through PredictedFigures below, so it holds exactly these keys) and metrics.json's
// `measured` (executor/src/run/metrics.cc). The report and `calibrate` pair a measured figure with
// its prediction by name, so a figure renamed here is renamed on both sides at once.

#include <optional>

namespace muonplan {
namespace metric {

// Figures both sides have, in the same unit: GiB (2^30) for memory, GB (1e9) for traffic.
inline constexpr const char* kOptimizerStepS = "optimizer_step_s";  // busiest rank
inline constexpr const char* kGpuPeakGib = "gpu_peak_gib";
inline constexpr const char* kGpuTransientGib = "gpu_transient_gib";  // above the step's start
inline constexpr const char* kAlltoallGbPerRankMax = "alltoall_gb_per_rank_max";
inline constexpr const char* kAlltoallBytesPerRankMax = "alltoall_bytes_per_rank_max";  // exact
inline constexpr const char* kH2dGbPerGpu = "h2d_gb_per_gpu";
inline constexpr const char* kD2hGbPerGpu = "d2h_gb_per_gpu";
inline constexpr const char* kShared[] = {kOptimizerStepS,         kGpuPeakGib,  kGpuTransientGib,
                                          kAlltoallGbPerRankMax,   kH2dGbPerGpu, kD2hGbPerGpu,
                                          kAlltoallBytesPerRankMax};

// Predicted only.
inline constexpr const char* kGpuAllocatedGib = "gpu_allocated_gib";  // the allocator's
inline constexpr const char* kGpuReservedGib = "gpu_reserved_gib";    // allocated + reserve
inline constexpr const char* kGpuOutsideAllocatorGib = "gpu_outside_allocator_gib";
inline constexpr const char* kFitMargin = "fit_margin";  // Prediction::fit_margin
inline constexpr const char* kHostRamPerNodeGib = "host_ram_per_node_gib";
inline constexpr const char* kTrainingStepS = "training_step_s";  // null without a workload
inline constexpr const char* kGpuSecondsPerStep = "gpu_seconds_per_step";  // step x world
inline constexpr const char* kNsFlopsPerRankMax = "ns_flops_per_rank_max";
// The plan file's named terms under `predicted` (not copied into the metrics).
inline constexpr const char* kBreakdown = "breakdown";

// Measured only.
inline constexpr const char* kHostPeakGibPerRankMax = "host_peak_gib_per_rank_max";
inline constexpr const char* kBusyS = "busy_s";  // by Resource name (prediction.h)
inline constexpr const char* kNonfiniteCheckS = "nonfinite_check_s";  // its share of the step
inline constexpr const char* kStateDigest = "state_digest";           // a string
inline constexpr const char* kStepsSkipped = "steps_skipped";         // --skip-nonfinite
inline constexpr const char* kOffload = "offload";                    // a string
inline constexpr const char* kNsVariant = "ns_variant";               // a string
// The GEMM library the backend ran (Backend::gemm_path), and OpenBLAS's kernel where it ran
// GEMMs (absent on cuda): the state digest depends on both.
inline constexpr const char* kGemmPath = "gemm_path";          // a string
inline constexpr const char* kOpenblasCore = "openblas_core";  // a string
// --check-reference: the one-rank MuonStep rerun (bit for bit on CPU) and the independent
// reference step (reference_step.h) with its bound.
inline constexpr const char* kOneRankMaxAbsDiff = "one_rank_max_abs_diff";
inline constexpr const char* kOneRankRelError = "one_rank_rel_error";
inline constexpr const char* kReferenceRelError = "reference_rel_error";
inline constexpr const char* kReferenceRelBound = "reference_rel_bound";
inline constexpr const char* kGpuRuntime = "gpu_runtime";  // the device runtime's, on a GPU
// The strings among them; every other measured value is a number (check_metrics).
inline constexpr const char* kMeasuredStrings[] = {kStateDigest, kOffload, kNsVariant, kGemmPath,
                                                   kOpenblasCore};

}  // namespace metric

// A plan's `predicted` figures (less the breakdown), typed: what plan_to_json writes from the
// Prediction and what execute copies into the metrics. Unset: the plan gave none (null).
struct PredictedFigures {
  std::optional<double> gpu_peak_gib, gpu_allocated_gib, gpu_reserved_gib,
      gpu_outside_allocator_gib, fit_margin, gpu_transient_gib, host_ram_per_node_gib,
      alltoall_gb_per_rank_max, alltoall_bytes_per_rank_max, h2d_gb_per_gpu, d2h_gb_per_gpu,
      optimizer_step_s, training_step_s, gpu_seconds_per_step, ns_flops_per_rank_max;
};

struct PredictedFigureKey {
  const char* name;
  std::optional<double> PredictedFigures::*member;
};
// Every figure, in the order the plan file writes them.
inline constexpr PredictedFigureKey kPredictedFigureKeys[] = {
    {metric::kGpuPeakGib, &PredictedFigures::gpu_peak_gib},
    {metric::kGpuAllocatedGib, &PredictedFigures::gpu_allocated_gib},
    {metric::kGpuReservedGib, &PredictedFigures::gpu_reserved_gib},
    {metric::kGpuOutsideAllocatorGib, &PredictedFigures::gpu_outside_allocator_gib},
    {metric::kFitMargin, &PredictedFigures::fit_margin},
    {metric::kGpuTransientGib, &PredictedFigures::gpu_transient_gib},
    {metric::kHostRamPerNodeGib, &PredictedFigures::host_ram_per_node_gib},
    {metric::kAlltoallGbPerRankMax, &PredictedFigures::alltoall_gb_per_rank_max},
    {metric::kAlltoallBytesPerRankMax, &PredictedFigures::alltoall_bytes_per_rank_max},
    {metric::kH2dGbPerGpu, &PredictedFigures::h2d_gb_per_gpu},
    {metric::kD2hGbPerGpu, &PredictedFigures::d2h_gb_per_gpu},
    {metric::kOptimizerStepS, &PredictedFigures::optimizer_step_s},
    {metric::kTrainingStepS, &PredictedFigures::training_step_s},
    {metric::kGpuSecondsPerStep, &PredictedFigures::gpu_seconds_per_step},
    {metric::kNsFlopsPerRankMax, &PredictedFigures::ns_flops_per_rank_max},
};

}  // namespace muonplan
