// Newton-Schulz coefficient schedules (docs/muon-step.md section 3). Shared by the planner (FLOPs,
// time) and the executor (the iteration itself).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace muonplan {

// The longest schedule muonplan runs: each step is three matrix products on every matrix, and
// published schedules have 5 to 10 steps.
inline constexpr size_t kMaxNsSteps = 64;

struct NsCoefficients {
  double a = 0, b = 0, c = 0;
};

struct NsSchedule {
  std::string name;  // preset name, or "custom"
  std::vector<NsCoefficients> steps;
  double norm_scale = 1.0;
  double update_rms = 0.2;  // the recipe's recommended update RMS
};

// Presets: quintic, polar-express, jordan, deepseek-v4. InputError (field --ns-schedule) on an
// unknown name. "a,b,c;a,b,c;..." gives an explicit list (norm_scale 1) of 1 to kMaxNsSteps
// steps of finite coefficients.
NsSchedule ns_schedule(const std::string& name_or_list);
std::vector<std::string> ns_schedule_presets();

}  // namespace muonplan
