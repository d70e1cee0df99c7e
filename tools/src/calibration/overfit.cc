// Signs of overfitting in a calibration (calibrate.h, overfit_warnings): read off the fitted
// constants as listed, so constants added to the fit are checked without a change here.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "muonplan/base/units.h"
#include "muonplan/tools/calibrate.h"

namespace muonplan {
namespace {

// Within this fraction of its range (or of its start, when unbounded above) of an end.
constexpr double kAtBound = 1e-3;

// "at its upper bound 1", "at 0", "at its lower bound 16", or "" when inside its range.
std::string where(const FittedConstant& k) {
  if (k.after == 0) return "at 0";
  const double span = k.hi > k.lo ? k.hi - k.lo : std::max(std::abs(k.before), 1.0);
  if (k.hi > k.lo && k.after >= k.hi - kAtBound * span)
    return "at its upper bound " + sig_figs(k.hi, 6);
  if (k.after <= k.lo + kAtBound * span) return "at its lower bound " + sig_figs(k.lo, 6);
  return "";
}

int fitted_constants(const CalibrationResult& result) {
  return static_cast<int>(std::count_if(result.constants.begin(), result.constants.end(),
                                        [](const FittedConstant& k) { return k.fitted; }));
}

}  // namespace

bool underdetermined(const CalibrationResult& result) {
  return fitted_constants(result) > result.determining_figures;
}

std::vector<std::string> overfit_warnings(const CalibrationResult& result) {
  std::vector<std::string> out;
  for (const FittedConstant& k : result.constants) {
    if (!k.fitted) continue;
    const std::string at = where(k);
    if (!at.empty()) {
      out.push_back(k.name + " fitted " + at + " (" + sig_figs(k.after, 6) +
                    "): the runs push it past what it models; give runs that exercise it "
                    "otherwise, or keep it");
    }
  }
  if (!underdetermined(result)) return out;
  // Only what would help: busy_s where a fitted run lacks it, a held-out check where none is.
  std::string help = "more runs";
  if (result.fit_runs_without_busy > 0)
    help += ", or measured.busy_s in the " + std::to_string(result.fit_runs_without_busy) +
            " run(s) without it,";
  const bool checked = std::any_of(result.runs.begin(), result.runs.end(),
                                   [](const RunCheck& r) { return r.held_out; });
  out.push_back(std::to_string(fitted_constants(result)) + " constants fitted to " +
                std::to_string(result.determining_figures) +
                " measured figures: the fit is underdetermined (" + help + " pin them down)" +
                (checked ? "" : "; check it on a held-out run (--holdout)"));
  return out;
}

}  // namespace muonplan
