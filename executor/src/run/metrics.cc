#include "muonplan/exec/metrics.h"

#include "muonplan/base/units.h"
#include "muonplan/planfile/metric_keys.h"
#include "muonplan/planfile/prediction.h"

namespace muonplan::exec {

nlohmann::json to_json(const Measured& m) {
  nlohmann::json busy;
  const std::pair<Resource, double> per_resource[] = {{Resource::gpu, m.busy_gpu_s},
                                                      {Resource::network, m.busy_network_s},
                                                      {Resource::pcie_h2d, m.busy_pcie_h2d_s},
                                                      {Resource::pcie_d2h, m.busy_pcie_d2h_s},
                                                      {Resource::cpu, m.busy_cpu_s}};
  for (const auto& [resource, seconds] : per_resource) {
    const bool device = resource == Resource::gpu || resource == Resource::pcie_h2d ||
                        resource == Resource::pcie_d2h;
    if (device && !m.device_busy_timed) continue;
    busy[to_string(resource)] = seconds;
  }
  nlohmann::json j = {{metric::kOptimizerStepS, m.optimizer_step_s},
                      {metric::kGpuPeakGib, m.gpu_peak_bytes / kGiB},
                      {metric::kGpuTransientGib, m.gpu_transient_bytes / kGiB},
                      {metric::kAlltoallGbPerRankMax, m.alltoall_bytes_per_rank_max / kGB},
                      {metric::kAlltoallBytesPerRankMax, m.alltoall_bytes_per_rank_max},
                      {metric::kH2dGbPerGpu, m.h2d_bytes_per_gpu / kGB},
                      {metric::kD2hGbPerGpu, m.d2h_bytes_per_gpu / kGB},
                      {metric::kHostPeakGibPerRankMax, m.host_peak_bytes_per_rank_max / kGiB},
                      {metric::kBusyS, busy},
                      {metric::kNonfiniteCheckS, m.nonfinite_check_s},
                      {metric::kStateDigest, m.state_digest},
                      {metric::kStepsSkipped, m.steps_skipped},
                      {metric::kOffload, m.offload},
                      {metric::kNsVariant, m.ns_variant},
                      {metric::kGemmPath, m.gemm_path}};
  if (!m.openblas_core.empty()) j[metric::kOpenblasCore] = m.openblas_core;
  const std::pair<const char*, const std::optional<double>*> checks[] = {
      {metric::kOneRankMaxAbsDiff, &m.one_rank_max_abs_diff},
      {metric::kOneRankRelError, &m.one_rank_rel_error},
      {metric::kReferenceRelError, &m.reference_rel_error},
      {metric::kReferenceRelBound, &m.reference_rel_bound}};
  for (const auto& [key, value] : checks) {
    if (*value) j[key] = **value;
  }
  if (m.runtime_memory) {
    const RuntimeMemory& r = *m.runtime_memory;
    j[metric::kGpuRuntime] = {{"pool_reserved_high_gib", double(r.pool_reserved_high_bytes) / kGiB},
                              {"pool_used_high_gib", double(r.pool_used_high_bytes) / kGiB},
                              {"device_used_gib", double(r.device_used_bytes) / kGiB}};
  }
  return j;
}

}  // namespace muonplan::exec
