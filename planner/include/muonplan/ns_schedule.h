// Newton-Schulz coefficient schedules (docs/muon-step.md section 3). Shared by the planner (FLOPs,
// time) and the executor (the iteration itself).
#pragma once

#include <string>
#include <vector>

namespace muonplan {

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
// unknown name. "a,b,c;a,b,c;..." gives an explicit list (norm_scale 1).
NsSchedule ns_schedule(const std::string& name_or_list);
std::vector<std::string> ns_schedule_presets();

}  // namespace muonplan
