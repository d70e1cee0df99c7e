#include "muonplan/planfile/prediction.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "muonplan/base/units.h"
#include "muonplan/planfile/prediction_terms.h"

namespace muonplan {

double sum(const std::vector<Term>& terms) {
  double s = 0;
  for (const Term& t : terms) s += t.value;
  return s;
}

double Prediction::gpu_allocated_bytes() const {
  return sum(gpu_persistent_bytes) + sum(gpu_transient_bytes) + sum(gpu_workload_bytes) +
         sum(gpu_runtime_bytes);
}

double Prediction::gpu_reserved_bytes() const {
  return gpu_allocated_bytes() + sum(gpu_reserve_bytes);
}

double Prediction::gpu_peak_bytes() const {
  return gpu_reserved_bytes() + sum(gpu_fixed_bytes);
}

bool Prediction::fits() const {
  return gpu_peak_bytes() <= gpu_limit_bytes * (1 - gpu_headroom) &&
         host_bytes() <= host_limit_bytes * (1 - host_headroom);
}

Prediction::Verdict Prediction::fit_verdict() const {
  if (fits()) return Verdict::fits;
  if (gpu_peak_bytes() <= gpu_limit_bytes && host_bytes() <= host_limit_bytes)
    return Verdict::tight;
  return Verdict::does_not_fit;
}

double Prediction::gpu_headroom_used_bytes() const {
  return std::max(0.0, gpu_peak_bytes() - gpu_limit_bytes * (1 - gpu_headroom));
}

const char* to_string(Prediction::Verdict v) {
  switch (v) {
    case Prediction::Verdict::fits:
      return "fits";
    case Prediction::Verdict::tight:
      return "tight";
    case Prediction::Verdict::does_not_fit:
      return "does_not_fit";
  }
  return "?";
}

double Prediction::fit_margin() const {
  auto margin = [](double used, double limit) {
    return limit > 0 ? 1 - used / limit : (used > 0 ? -1.0 : 0.0);
  };
  return std::min(margin(gpu_peak_bytes(), gpu_limit_bytes * (1 - gpu_headroom)),
                  margin(host_bytes(), host_limit_bytes * (1 - host_headroom)));
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

const char* to_string(TermSum s) {
  switch (s) {
    case TermSum::gpu_allocated:
      return "gpu_allocated";
    case TermSum::gpu_reserved:
      return "gpu_reserved";
    case TermSum::gpu_peak:
      return "gpu_peak";
    case TermSum::host:
      return "host";
    case TermSum::traffic:
      return "traffic";
    case TermSum::step:
      return "step";
    case TermSum::hidden:
      return "hidden";
    case TermSum::between:
      return "between";
  }
  return "?";
}

double unit_scale(const char* unit) {
  if (std::strcmp(unit, "gib") == 0) return kGiB;
  if (std::strcmp(unit, "gb") == 0) return kGB;
  return 1;  // seconds
}

}  // namespace muonplan
