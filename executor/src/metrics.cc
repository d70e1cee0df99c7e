#include "muonplan/exec/metrics.h"

#include "muonplan/prediction.h"
#include "muonplan/units.h"

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
  nlohmann::json j = {{"optimizer_step_s", m.optimizer_step_s},
                      {"gpu_peak_gib", m.gpu_peak_bytes / kGiB},
                      {"gpu_transient_gib", m.gpu_transient_bytes / kGiB},
                      {"alltoall_gb_per_rank_max", m.alltoall_bytes_per_rank_max / kGB},
                      {"alltoall_bytes_per_rank_max", m.alltoall_bytes_per_rank_max},
                      {"h2d_gb_per_gpu", m.h2d_bytes_per_gpu / kGB},
                      {"d2h_gb_per_gpu", m.d2h_bytes_per_gpu / kGB},
                      {"host_peak_gib_per_rank_max", m.host_peak_bytes_per_rank_max / kGiB},
                      {"busy_s", busy},
                      {"nonfinite_check_s", m.nonfinite_check_s},
                      {"state_digest", m.state_digest},
                      {"steps_skipped", m.steps_skipped},
                      {"offload", m.offload},
                      {"ns_variant", m.ns_variant}};
  const std::pair<const char*, const std::optional<double>*> checks[] = {
      {"one_rank_max_abs_diff", &m.one_rank_max_abs_diff},
      {"one_rank_rel_error", &m.one_rank_rel_error},
      {"reference_rel_error", &m.reference_rel_error},
      {"reference_rel_bound", &m.reference_rel_bound}};
  for (const auto& [key, value] : checks) {
    if (*value) j[key] = **value;
  }
  if (m.runtime_memory) {
    const RuntimeMemory& r = *m.runtime_memory;
    j["gpu_runtime"] = {{"pool_reserved_high_gib", double(r.pool_reserved_high_bytes) / kGiB},
                        {"pool_used_high_gib", double(r.pool_used_high_bytes) / kGiB},
                        {"device_used_gib", double(r.device_used_bytes) / kGiB}};
  }
  return j;
}

}  // namespace muonplan::exec
