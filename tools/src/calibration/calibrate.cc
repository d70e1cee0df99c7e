#include "muonplan/tools/calibrate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <sstream>

#include "muonplan/base/error.h"
#include "muonplan/base/io.h"
#include "muonplan/base/units.h"
#include "muonplan/planfile/plan_checks.h"
#include "muonplan/planfile/stage_names.h"
#include "muonplan/planner/cost_model.h"
#include "muonplan/planner/model_spec.h"
#include "muonplan/planner/owners.h"

namespace muonplan {
namespace {

// Predicted figures the fit compares with measurements.
struct Predicted {
  double step_s = 0, device_s = 0, h2d_s = 0, host_s = 0;
};

Predicted predict_run(const Topology& topo, const CalibrationRun& run) {
  PlanOptions o = run.plan.options;
  o.workload.reset();
  const Prediction p = predict(ModelSpec{}, run.plan.inventory, topo, o, run.plan.chunks);
  Predicted r;
  r.step_s = p.optimizer_step_s;
  for (const Term& t : p.step_phases_s) {
    if (t.name == phase::kGpuBusy) r.device_s += t.value;
    if (t.name == phase::kPcieH2DBusy || t.name == phase::kStateH2D) r.h2d_s += t.value;
    if (t.name == phase::kCpuBusy) r.host_s += t.value;
  }
  return r;
}

// A calibratable constant: how the fit moves it (an unconstrained z mapped into its range).
struct Knob {
  const char* name;
  double Calibration::*field;
  bool efficiency;  // (0, 1] through a logistic map; otherwise positive through exp
  std::function<bool(const CalibrationRun&)> exercised;
  const char* determined_by;
};

double to_value(const Knob& k, double z) {
  return k.efficiency ? 1.0 / (1.0 + std::exp(-z)) : std::exp(z);
}
double to_z(const Knob& k, double v) {
  if (k.efficiency) {
    v = std::clamp(v, 1e-6, 1 - 1e-6);
    return std::log(v / (1 - v));
  }
  // A constant at 0 (not modeled) starts the search at 1 of its unit.
  return std::log(v > 0 ? v : 1.0);
}

bool multi_rank(const CalibrationRun& r) {
  return r.plan.world > 1;
}
bool offloaded(const CalibrationRun& r) {
  return r.plan.options.offload != OffloadMode::none;
}
bool full_offload(const CalibrationRun& r) {
  return r.plan.options.offload == OffloadMode::full;
}
bool any(const CalibrationRun&) {
  return true;
}

std::vector<Knob> knobs() {
  return {
      {"gemm_efficiency_max", &Calibration::gemm_efficiency_max, true, any,
       "device time of the NS GEMMs"},
      {"gemm_k_overhead", &Calibration::gemm_k_overhead, false, any,
       "how NS time grows with the inner dimension"},
      {"kernel_launch_us", &Calibration::kernel_launch_us, false, any,
       "fixed cost per kernel, from the smallest matrices"},
      {"hbm_efficiency", &Calibration::hbm_efficiency, true, any,
       "elementwise kernels (momentum, update, AdamW)"},
      {"link_efficiency", &Calibration::link_efficiency, true, multi_rank,
       "step time of multi-rank runs (the all-to-alls)"},
      {"collective_us", &Calibration::collective_us, false, multi_rank,
       "step time of multi-rank runs: fixed cost per all-to-all"},
      {"pcie_efficiency", &Calibration::pcie_efficiency, true, offloaded,
       "H2D copies of offloaded runs"},
      {"host_kernel_efficiency", &Calibration::host_kernel_efficiency, true, full_offload,
       "host kernels of full-offload runs"},
  };
}

double log_ratio_sq(double predicted, double measured) {
  if (!(predicted > 0) || !(measured > 0)) return 0;
  const double r = std::log(predicted / measured);
  return r * r;
}

// Measured component times below this are timer noise, not information.
constexpr double kMinComponentS = 1e-3;
constexpr double kComponentWeight = 0.25;
constexpr double kStepTarget = 0.05;

double objective(const Topology& topo, const std::vector<CalibrationRun>& runs) {
  double f = 0;
  for (const CalibrationRun& r : runs) {
    const Predicted p = predict_run(topo, r);
    // Quadratic near the target, quartic beyond 5%: the fit evens out the worst step errors
    // rather than trading one large error for many small ones.
    const double e2 = log_ratio_sq(p.step_s, r.step_s);
    f += e2 * (1 + e2 / (kStepTarget * kStepTarget));
    auto component = [&](const std::optional<double>& m, double pred) {
      if (m && *m >= kMinComponentS) f += kComponentWeight * log_ratio_sq(pred, *m);
    };
    component(r.device_s, p.device_s);
    component(r.h2d_s, p.h2d_s);
    component(r.host_s, p.host_s);
  }
  return f;
}

// The fit's work, by its inputs (fit_evaluation_bound): the tiles tried, Nelder-Mead restarts
// from the best point (they escape a simplex that collapsed early), and evaluations per restart
// per simplex vertex. A restart that finds nothing better ends the tile's fit.
// 200 a vertex: the committed CPU fits converge within about 450 a restart (8 constants: 1800
// allowed); 400 let a fit that does not converge run 2x longer for nothing.
constexpr int kTiles = 6, kRestarts = 3, kEvalsPerVertex = 200;
// A simplex this small in z (log or logit of each constant) has converged: the constants are
// written to 6 significant figures, and z moves a constant by about dz relative. Without it a
// fit whose objective never evens out within 1e-12 (plateaus of the GEMM tile waves, measured
// noise) ran to the evaluation cap: 3-5 s for one step's metrics, past 90 s for another's.
constexpr double kSimplexZ = 1e-7;

// Nelder-Mead on an unconstrained vector; returns the best point found. At most max_evals + n
// + 1 evaluations (a shrink's n after the last check).
std::vector<double> nelder_mead(const std::function<double(const std::vector<double>&)>& f,
                                std::vector<double> x0, double step, int max_evals) {
  const size_t n = x0.size();
  std::vector<std::vector<double>> s(n + 1, x0);
  std::vector<double> fs(n + 1);
  for (size_t i = 0; i < n; ++i) s[i + 1][i] += step;
  for (size_t i = 0; i <= n; ++i) fs[i] = f(s[i]);
  int evals = static_cast<int>(n + 1);
  while (evals < max_evals) {
    std::vector<size_t> order(n + 1);
    for (size_t i = 0; i <= n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return fs[a] < fs[b]; });
    const size_t best = order.front(), worst = order.back(), second = order[n - 1];
    if (std::abs(fs[worst] - fs[best]) < 1e-12 * (1 + std::abs(fs[best]))) break;
    double size = 0;
    for (size_t i = 0; i <= n; ++i) {
      for (size_t d = 0; d < n; ++d) size = std::max(size, std::abs(s[i][d] - s[best][d]));
    }
    if (size < kSimplexZ) break;
    std::vector<double> c(n, 0.0);
    for (size_t i = 0; i <= n; ++i) {
      if (i == worst) continue;
      for (size_t d = 0; d < n; ++d) c[d] += s[i][d] / n;
    }
    auto along = [&](double t) {
      std::vector<double> p(n);
      for (size_t d = 0; d < n; ++d) p[d] = c[d] + t * (s[worst][d] - c[d]);
      return p;
    };
    const std::vector<double> r = along(-1);
    const double fr = f(r);
    ++evals;
    if (fr < fs[best]) {
      const std::vector<double> e = along(-2);
      const double fe = f(e);
      ++evals;
      if (fe < fr) {
        s[worst] = e, fs[worst] = fe;
      } else {
        s[worst] = r, fs[worst] = fr;
      }
    } else if (fr < fs[second]) {
      s[worst] = r, fs[worst] = fr;
    } else {
      const std::vector<double> k = along(fr < fs[worst] ? -0.5 : 0.5);
      const double fk = f(k);
      ++evals;
      if (fk < std::min(fr, fs[worst])) {
        s[worst] = k, fs[worst] = fk;
      } else {  // shrink towards the best
        for (size_t i = 0; i <= n; ++i) {
          if (i == best) continue;
          for (size_t d = 0; d < n; ++d) s[i][d] = s[best][d] + 0.5 * (s[i][d] - s[best][d]);
          fs[i] = f(s[i]);
          ++evals;
        }
      }
    }
  }
  return s[std::min_element(fs.begin(), fs.end()) - fs.begin()];
}

std::string fmt(double v) {
  return sig_figs(v, 6);
}

}  // namespace

int64_t fit_evaluation_bound(int constants) {
  // Nelder-Mead's cap, a shrink past it, and the restart's result evaluated once more.
  const int64_t per_restart = int64_t(kEvalsPerVertex) * (constants + 1) + constants + 2;
  return int64_t(kTiles) * kRestarts * per_restart;
}

double predict_step_s(const Topology& topo, const CalibrationRun& run) {
  return predict_run(topo, run).step_s;
}

CalibrationRun load_calibration_run(const std::string& path) {
  const nlohmann::json j = read_json_file(path);
  check_metrics(j, path);  // schema, measured, predicted; numbers finite, >= 0, not absurd
  const nlohmann::json& m = j["measured"];
  CalibrationRun r;
  r.name = path;
  const char* step = metric::kOptimizerStepS;  // the measured keys: metric_keys.h
  if (!m.contains(step) || !m[step].is_number() || !(m[step].get<double>() > 0)) {
    throw InputError({path, 0, 0}, std::string("measured.") + step, "missing or not positive");
  }
  r.step_s = m[step].get<double>();
  if (m.contains(metric::kBusyS) && m[metric::kBusyS].is_object()) {
    const nlohmann::json& b = m[metric::kBusyS];
    auto get = [&](const char* key) -> std::optional<double> {
      if (b.contains(key) && b[key].is_number()) return b[key].get<double>();
      return std::nullopt;
    };
    r.device_s = get(to_string(Resource::gpu));
    r.h2d_s = get(to_string(Resource::pcie_h2d));
    r.host_s = get(to_string(Resource::cpu));
  }
  if (m.contains("gpu_runtime") && m["gpu_runtime"].is_object()) {
    const nlohmann::json& g = m["gpu_runtime"];
    auto gib = [&](const nlohmann::json& o, const char* key) {
      return o.contains(key) && o[key].is_number() ? o[key].get<double>() * kGiB : 0.0;
    };
    r.gpu_runtime = CalibrationRun::GpuRuntime{
        gib(m, "gpu_peak_gib"), gib(g, "pool_reserved_high_gib"), gib(g, "device_used_gib")};
  }
  const std::string plan = j.value("plan", "");
  if (plan.empty()) throw InputError({path, 0, 0}, "plan", "missing: the metrics name no plan");
  namespace fs = std::filesystem;
  fs::path plan_path = plan;
  if (!fs::exists(plan_path)) {
    plan_path = fs::path(path).parent_path() / fs::path(plan).filename();
  }
  if (!fs::exists(plan_path)) {
    throw InputError({path, 0, 0}, "plan", "'" + plan + "' not found, nor beside the metrics file");
  }
  r.plan_path = plan_path.string();
  r.plan = load_plan(r.plan_path);
  // The per-rank loads the cost model reads are the planner's figures, not the file's.
  r.plan.chunks.loads = compute_loads(r.plan.inventory, r.plan.chunks,
                                      static_cast<int>(r.plan.options.schedule.steps.size()));
  return r;
}

double CalibrationResult::max_fit_error() const {
  double e = 0;
  for (const RunCheck& r : runs) {
    if (!r.held_out) e = std::max(e, std::abs(r.rel_error_after()));
  }
  return e;
}

double CalibrationResult::max_held_out_error() const {
  double e = 0;
  for (const RunCheck& r : runs) {
    if (r.held_out) e = std::max(e, std::abs(r.rel_error_after()));
  }
  return e;
}

double CalibrationResult::max_held_out_error_before() const {
  double e = 0;
  for (const RunCheck& r : runs) {
    if (r.held_out) e = std::max(e, std::abs(r.rel_error_before()));
  }
  return e;
}

// Each run before (topo) and after (best) the fit, with its measured components, and the
// figures that determined the fit.
void check_runs(const Topology& topo, const Topology& best, const std::vector<CalibrationRun>& fit,
                const std::vector<CalibrationRun>& held_out, CalibrationResult& result) {
  auto check = [&](const CalibrationRun& r, bool out) {
    RunCheck c{r.name, out, r.step_s, predict_step_s(topo, r), predict_step_s(best, r), {}};
    const Predicted p = predict_run(best, r);
    if (r.device_s) c.components.emplace_back("device", *r.device_s, p.device_s);
    if (r.h2d_s) c.components.emplace_back("pcie_h2d", *r.h2d_s, p.h2d_s);
    if (r.host_s) c.components.emplace_back("host_kernels", *r.host_s, p.host_s);
    result.runs.push_back(std::move(c));
  };
  for (const CalibrationRun& r : fit) {
    check(r, false);
    auto counts = [](const std::optional<double>& m) { return m && *m >= kMinComponentS; };
    result.determining_figures +=
        1 + counts(r.device_s) + counts(r.h2d_s) + counts(r.host_s) + 2 * bool(r.gpu_runtime);
    result.fit_runs_without_busy += !r.device_s && !r.h2d_s && !r.host_s;
  }
  for (const CalibrationRun& r : held_out) check(r, true);
}

CalibrationResult calibrate(const Topology& topo, const std::vector<CalibrationRun>& fit,
                            const std::vector<CalibrationRun>& held_out,
                            const std::function<void(const std::string&)>& progress) {
  if (fit.empty()) throw InputError({}, "--metrics", "no runs to fit");
  std::vector<Knob> active;
  CalibrationResult result;
  for (const Knob& k : knobs()) {
    FittedConstant c{k.name, topo.calibration.*k.field, topo.calibration.*k.field, false, "",
                     0,      k.efficiency ? 1.0 : 0.0};
    if (std::any_of(fit.begin(), fit.end(), k.exercised)) {
      active.push_back(k);
      c.fitted = true;
      c.note = k.determined_by;
    } else {
      c.note = "kept: no run exercises it";
    }
    result.constants.push_back(c);
  }
  // The GEMM tile is discrete: try the common ones, fit the continuous constants for each.
  const std::pair<int, int> tiles[kTiles] = {{16, 16},   {32, 32},   {64, 64},
                                             {128, 128}, {128, 256}, {256, 128}};
  double best_f = std::numeric_limits<double>::infinity();
  Topology best = topo;
  result.fit_evaluation_bound = fit_evaluation_bound(int(active.size()));
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  Clock::time_point said = start;
  int tile = 0;
  for (const auto& [tm, tn] : tiles) {
    ++tile;
    Topology t = topo;
    t.calibration.gemm_tile_m = tm;
    t.calibration.gemm_tile_n = tn;
    auto apply = [&](const std::vector<double>& z, Topology& into) {
      for (size_t i = 0; i < active.size(); ++i) {
        into.calibration.*active[i].field = to_value(active[i], z[i]);
      }
    };
    auto f = [&](const std::vector<double>& z) {
      Topology trial = t;
      apply(z, trial);
      ++result.fit_evaluations;
      const Clock::time_point now = Clock::now();
      if (progress && now - said >= std::chrono::duration<double>(kFitProgressS)) {
        said = now;
        progress("tile " + std::to_string(tile) + " of " + std::to_string(kTiles) + ", " +
                 std::to_string(result.fit_evaluations) + " of at most " +
                 std::to_string(result.fit_evaluation_bound) + " evaluations x " +
                 std::to_string(fit.size()) + " run(s), " +
                 std::to_string(int(std::chrono::duration<double>(now - start).count())) + " s");
      }
      return objective(trial, fit);
    };
    std::vector<double> z;
    for (const Knob& k : active) z.push_back(to_z(k, topo.calibration.*k.field));
    const int per_restart = kEvalsPerVertex * (int(z.size()) + 1);
    double fz = std::numeric_limits<double>::infinity();
    for (int round = 0; round < kRestarts; ++round) {
      const std::vector<double> next = nelder_mead(f, z, 1.0, per_restart);
      const double f_next = f(next);
      if (round > 0 && !(f_next < fz)) break;  // the restart found nothing better
      z = next, fz = f_next;
    }
    if (fz < best_f) {
      best_f = fz;
      best = t;
      apply(z, best);
    }
  }
  for (FittedConstant& c : result.constants) {
    for (const Knob& k : knobs()) {
      if (c.name == k.name) c.after = std::stod(fmt(best.calibration.*k.field));
    }
  }
  // The tiles tried span 16..256: the best at an end may lie beyond what was tried.
  result.constants.push_back({"gemm_tile_m", double(topo.calibration.gemm_tile_m),
                              double(best.calibration.gemm_tile_m), true,
                              "best of the common GEMM tiles", 16, 256});
  result.constants.push_back({"gemm_tile_n", double(topo.calibration.gemm_tile_n),
                              double(best.calibration.gemm_tile_n), true,
                              "best of the common GEMM tiles", 16, 256});
  // What is written is what is checked: the constants as the YAML will hold them.
  for (const Knob& k : knobs())
    best.calibration.*k.field = std::stod(fmt(best.calibration.*k.field));
  result.calibration = best.calibration;
  check_runs(topo, best, fit, held_out, result);
  fit_overheads(topo.overheads, fit, result);
  return result;
}

std::string with_calibration(const std::string& text, const Calibration& c,
                             const std::string& comment) {
  std::ostringstream block;
  block << "# " << comment << "\n";
  block << "calibration:\n"
        << "  gemm_efficiency_max: " << fmt(c.gemm_efficiency_max) << "\n"
        << "  gemm_k_overhead: " << fmt(c.gemm_k_overhead) << "\n"
        << "  gemm_tile_m: " << c.gemm_tile_m << "\n"
        << "  gemm_tile_n: " << c.gemm_tile_n << "\n"
        << "  kernel_launch_us: " << fmt(c.kernel_launch_us) << "\n"
        << "  hbm_efficiency: " << fmt(c.hbm_efficiency) << "\n"
        << "  link_efficiency: " << fmt(c.link_efficiency) << "\n"
        << "  collective_us: " << fmt(c.collective_us) << "\n"
        << "  pcie_efficiency: " << fmt(c.pcie_efficiency) << "\n"
        << "  host_kernel_efficiency: " << fmt(c.host_kernel_efficiency) << "\n"
        << "  training_gemm_efficiency: " << fmt(c.training_gemm_efficiency) << "\n"
        << "  attention_fa2_efficiency: " << fmt(c.attention_fa2_efficiency) << "\n"
        << "  attention_fa3_efficiency: " << fmt(c.attention_fa3_efficiency) << "\n"
        << "  attention_sdpa_efficiency: " << fmt(c.attention_sdpa_efficiency) << "\n"
        << "  host_sync_us: " << fmt(c.host_sync_us) << "\n"
        << "  eager_op_us: " << fmt(c.eager_op_us) << "\n"
        << "  python_iteration_ns: " << fmt(c.python_iteration_ns) << "\n"
        << "  layer_overhead_us: " << fmt(c.layer_overhead_us) << "\n"
        << "  weight_broadcast_gbps: " << fmt(c.weight_broadcast_gbps) << "\n"
        << "  ep_comm_overlap: " << fmt(c.ep_comm_overlap) << "\n"
        << "  cp_comm_overlap: " << fmt(c.cp_comm_overlap) << "\n";
  // Which runs the step's constants came from stays with them (no quote in it to escape:
  // the bundled notes have none; one with a quote is written without it).
  if (!c.step_time_calibrated_on.empty()) {
    std::string note = c.step_time_calibrated_on;
    note.erase(std::remove(note.begin(), note.end(), '"'), note.end());
    block << "  step_time_calibrated_on: \"" << note << "\"\n";
  }
  std::istringstream in(text);
  std::ostringstream out;
  std::string line;
  bool inside = false, written = false;
  while (std::getline(in, line)) {
    if (inside) {
      // The block ends at the next line that starts in column 0 (a key or a comment).
      if (line.empty() || line[0] == ' ' || line[0] == '\t') continue;
      inside = false;
    }
    if (line.rfind("calibration:", 0) == 0) {
      inside = true;
      written = true;
      out << block.str();
      continue;
    }
    out << line << "\n";
  }
  if (!written) out << block.str();
  return out.str();
}

}  // namespace muonplan
