// Fitting the topology's fixed GPU costs (overheads.cuda_context_gib,
// overheads.allocator_slack_fraction) from what the CUDA runtime reported (calibrate.h).
#include <algorithm>
#include <cstdio>
#include <string>

#include "muonplan/base/units.h"
#include "muonplan/tools/calibrate.h"

namespace muonplan {
void fit_overheads(const Overheads& before, const std::vector<CalibrationRun>& runs,
                   CalibrationResult& result) {
  result.overheads = before;
  double slack = -1, outside_bytes = -1;
  std::string slack_run, outside_run;
  int with_runtime = 0;
  for (const CalibrationRun& r : runs) {
    if (!r.gpu_runtime) continue;
    const CalibrationRun::GpuRuntime& g = *r.gpu_runtime;
    ++with_runtime;
    if (g.counted_peak_bytes > 0 && g.pool_reserved_high_bytes > 0) {
      const double s = std::max(0.0, g.pool_reserved_high_bytes / g.counted_peak_bytes - 1);
      if (s > slack) slack = s, slack_run = r.name;
    }
    if (g.device_used_bytes > 0) {
      const double o = std::max(0.0, g.device_used_bytes - g.pool_reserved_high_bytes);
      if (o > outside_bytes) outside_bytes = o, outside_run = r.name;
    }
  }
  const std::string none =
      "kept: no run reports gpu_runtime (CUDA runs do; the CPU backends count every byte)";
  FittedConstant s{"overheads.allocator_slack_fraction", before.allocator_slack_fraction,
                   before.allocator_slack_fraction, false, none};
  FittedConstant c{"overheads.cuda_context_gib", before.cuda_context_gib, before.cuda_context_gib,
                   false, none};
  if (slack >= 0) {
    result.overheads.allocator_slack_fraction = std::stod(sig_figs(slack, 4));
    s = {s.name, s.before, result.overheads.allocator_slack_fraction, true,
         "pool reserved high / counted peak - 1, largest of " + std::to_string(with_runtime) +
             " CUDA run(s): " + slack_run};
  } else if (with_runtime > 0) {
    s.note = "kept: no run reports a reserved high-water mark and a counted peak";
  }
  if (outside_bytes >= 0) {
    result.overheads.cuda_context_gib = std::stod(sig_figs(outside_bytes / kGiB, 4));
    c = {c.name, c.before, result.overheads.cuda_context_gib, true,
         "device used - pool reserved high, largest of " + std::to_string(with_runtime) +
             " CUDA run(s): " + outside_run};
  } else if (with_runtime > 0) {
    c.note = "kept: no run reports the device's used memory";
  }
  result.overheads_fitted = s.fitted || c.fitted;
  result.constants.push_back(c);
  result.constants.push_back(s);
}

}  // namespace muonplan
