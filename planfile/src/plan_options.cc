#include "muonplan/planfile/plan_options.h"

#include "muonplan/base/error.h"

namespace muonplan {

OffloadMode parse_offload(const std::string& name) {
  return parse_enum(kOffloadModeNames, name, "--offload", {"auto"});
}
OptimizerKind parse_optimizer(const std::string& name) {
  return parse_enum(kOptimizerNames, name, "--optimizer");
}
OffloadStaging parse_offload_staging(const std::string& name) {
  return parse_enum(kOffloadStagingNames, name, "--offload-staging");
}
RuntimeKind parse_runtime(const std::string& name) {
  return parse_enum(kRuntimeNames, name, "--runtime");
}
int64_t parse_dtype_bytes(const std::string& flag, const std::string& name) {
  if (name == "float32") return 4;
  if (name == "bfloat16") return 2;
  throw InputError({}, flag, "expected float32 or bfloat16, got '" + name + "'");
}

const char* dtype_name(int64_t bytes) {
  return bytes == 2 ? "bfloat16" : "float32";
}

CpStyle parse_cp_style(const std::string& name) {
  return parse_enum(kCpStyleNames, name, "--cp-style");
}
AttentionKernel parse_attention_kernel(const std::string& name) {
  return parse_enum(kAttentionKernelNames, name, "--attention");
}
const char* to_string(AttentionKernel k) {
  return enum_name(kAttentionKernelNames, k);
}

const char* to_string(OffloadMode m) {
  return enum_name(kOffloadModeNames, m);
}
const char* to_string(OptimizerKind k) {
  return enum_name(kOptimizerNames, k);
}
const char* to_string(OffloadStaging s) {
  return s == OffloadStaging::none ? "none" : enum_name(kOffloadStagingNames, s);
}
const char* to_string(RuntimeKind r) {
  return enum_name(kRuntimeNames, r);
}

// Our executor allocates exactly what is predicted: no headroom. A PyTorch trainer's peak moves
// with routing and the allocator's history from step to step: 5% of the GPU (7 GiB on an H200)
// and 5% of host RAM (page cache, other processes) stay free.
double PlanOptions::gpu_headroom_or() const {
  if (gpu_headroom >= 0) return gpu_headroom;
  return runtime == RuntimeKind::pytorch ? 0.05 : 0.0;
}
double PlanOptions::host_headroom_or() const {
  if (host_headroom >= 0) return host_headroom;
  return runtime == RuntimeKind::pytorch ? 0.05 : 0.0;
}

const char* to_string(CpStyle s) {
  return enum_name(kCpStyleNames, s);
}

}  // namespace muonplan
