#include "muonplan/prediction.h"

#include <numeric>

namespace muonplan {

double sum(const std::vector<Term>& terms) {
  double s = 0;
  for (const Term& t : terms) s += t.value;
  return s;
}

double Prediction::gpu_peak_bytes() const {
  return sum(gpu_persistent_bytes) + sum(gpu_transient_bytes) + sum(gpu_fixed_bytes) +
         sum(gpu_workload_bytes);
}

bool Prediction::fits() const {
  return gpu_peak_bytes() <= gpu_limit_bytes && host_bytes() <= host_limit_bytes;
}

const char* to_string(Resource r) {
  switch (r) {
    case Resource::gpu:
      return "gpu";
    case Resource::network:
      return "network";
    case Resource::pcie_h2d:
      return "pcie_h2d";
    case Resource::pcie_d2h:
      return "pcie_d2h";
    case Resource::cpu:
      return "cpu";
  }
  return "?";
}

}  // namespace muonplan
