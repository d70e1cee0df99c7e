// What `muonplan execute` measured, in the prediction's names and units: a key of `measured`
// in metrics.json means what the same key of `predicted` means (docs/cli-contract.md,
// "Metrics"), so the report and `calibrate` compare them without a mapping table.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "muonplan/exec/backend.h"

namespace muonplan::exec {

struct Measured {
  double optimizer_step_s = 0;  // median of steps 2+ (all when one), busiest rank
  // Backend memory, max over ranks and steps. The backend's own allocations only: on a GPU the
  // prediction's fixed terms (CUDA context, allocator slack) are not in it.
  double gpu_peak_bytes = 0;
  double gpu_transient_bytes = 0;  // above what the step started with, on the peak's rank
  double alltoall_bytes_per_rank_max = 0;
  double h2d_bytes_per_gpu = 0, d2h_bytes_per_gpu = 0;  // per rank (one GPU each), max
  double host_peak_bytes_per_rank_max = 0;              // offloaded state and staging buffers
  // Host wall time per step, by the pipeline's resources (the planner's Resource names), median
  // step, busiest rank each: gpu (backend calls), network (waiting on exchanges), pcie_h2d,
  // pcie_d2h, cpu (host kernels).
  double busy_gpu_s = 0, busy_network_s = 0, busy_pcie_h2d_s = 0, busy_pcie_d2h_s = 0,
         busy_cpu_s = 0;
  // False on a backend whose calls only enqueue (Backend::host_timed): gpu, pcie_h2d and
  // pcie_d2h are then left out of busy_s (host time around a launch is not device time), so
  // calibrate does not fit them.
  bool device_busy_timed = true;
  // The device runtime's figures (Backend::runtime_memory), max over ranks, after the steps (so
  // NCCL has connected): the pool's high-water marks and the device's used memory, which hold
  // what gpu_peak_bytes does not count (cuBLAS workspaces, NCCL buffers, the context, pool
  // growth from stream-ordered frees). Absent on the CPU backends.
  std::optional<RuntimeMemory> runtime_memory;
  double nonfinite_check_s = 0;  // the non-finite check's share of the step
  std::string state_digest;
  int64_t steps_skipped = 0;
  std::string offload, ns_variant;
  std::string gemm_path,
      openblas_core;  // Backend::describe().gemm_path; openblas_core empty: none ran
  // With --check-reference (docs/executor-numerics.md, "The independent reference"), max over
  // ranks: the sharded state against the same steps of MuonStep on one rank (largest element
  // difference, and largest relative difference of a tensor's update or optimizer state; 0 on
  // the CPU backends), and against the independent reference step, with the bound it must meet.
  std::optional<double> one_rank_max_abs_diff, one_rank_rel_error;
  std::optional<double> reference_rel_error, reference_rel_bound;
};

// The `measured` object of metrics.json: GiB (2^30) for memory, GB (1e9) for traffic, as the
// plan's `predicted`; exact byte counts where the plan has them too.
nlohmann::json to_json(const Measured& m);

}  // namespace muonplan::exec
