#include "muonplan/plan_options.h"

#include "muonplan/error.h"

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
CpStyle parse_cp_style(const std::string& name) {
  return parse_enum(kCpStyleNames, name, "--cp-style");
}

const char* to_string(OffloadMode m) {
  return enum_name(kOffloadModeNames, m);
}
const char* to_string(OptimizerKind k) {
  return enum_name(kOptimizerNames, k);
}
const char* to_string(OffloadStaging s) {
  return enum_name(kOffloadStagingNames, s);
}
const char* to_string(CpStyle s) {
  return enum_name(kCpStyleNames, s);
}

}  // namespace muonplan
