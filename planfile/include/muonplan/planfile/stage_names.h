#pragma once
// The names of the optimizer step's pipeline stages, one table for both sides: the planner's
// schedule (cost_model.cc) predicts stages under these names and the executor's trace
// (step.cc) records them under the same, so `report --trace` lines up a measured stage with
// its prediction by name. A stage renamed here is renamed on both sides at once. The step's
// phases, below, likewise for the cost model and the calibration fit.

namespace muonplan::stage {

// Muon matrices.
inline constexpr const char* kMomentum = "momentum";  // momentum fold on the device
inline constexpr const char* kToOwners = "all-to-all to owners";
inline constexpr const char* kNewtonSchulz = "Newton-Schulz";
inline constexpr const char* kBack = "all-to-all back";
inline constexpr const char* kUpdate = "update + decay";  // scaled update and decay on the device

// Host passes (optimizer and full offload).
inline constexpr const char* kGradsD2H = "bf16 grads D2H";
inline constexpr const char* kCpuFold = "CPU fold";
inline constexpr const char* kCpuMomentumCast = "CPU momentum cast";  // PyTorch runtime only
inline constexpr const char* kMomentumH2D = "bf16 momentum H2D";
inline constexpr const char* kUpdateD2H = "bf16 update D2H";
inline constexpr const char* kCpuApply = "CPU apply";
inline constexpr const char* kCpuWeightCast = "CPU weight cast";  // PyTorch runtime only
inline constexpr const char* kWeightsH2D = "bf16 weights H2D";

// AdamW parameters.
inline constexpr const char* kCpuAdamw = "CPU AdamW";
inline constexpr const char* kAdamwKernel = "AdamW kernel";

// Optimizer state staged through the device (chunked or whole).
inline constexpr const char* kStateH2D = "state H2D";
inline constexpr const char* kStateD2H = "state D2H";

}  // namespace muonplan::stage

// The optimizer step's phases (Prediction::step_phases_s): what the cost model writes
// (cost_model.cc) and the calibration fit reads back by name (calibrate.cc); reports/report.py
// reads the last two.
namespace muonplan::phase {

inline constexpr const char* kStateH2D = "state_h2d";  // whole staging: the state up, before
inline constexpr const char* kStateD2H = "state_d2h";  // and back, after
// The stages' time summed per resource.
inline constexpr const char* kGpuBusy = "gpu_busy";
inline constexpr const char* kNetworkBusy = "network_busy";
inline constexpr const char* kPcieH2DBusy = "pcie_h2d_busy";
inline constexpr const char* kPcieD2HBusy = "pcie_d2h_busy";
inline constexpr const char* kCpuBusy = "cpu_busy";
inline constexpr const char* kPipelinedChunks = "pipelined_chunks";  // the schedule's makespan
inline constexpr const char* kOverlapped = "overlapped";  // busy time hidden behind others

}  // namespace muonplan::phase
