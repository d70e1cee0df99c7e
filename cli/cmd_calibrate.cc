// muonplan calibrate: fit the topology's calibration constants to measured executor runs and
// write the calibrated topology (docs/planner.md, "Calibration").
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "muonplan/base/error.h"
#include "muonplan/base/io.h"
#include "muonplan/tools/calibrate.h"
#include "muonplan/tools/training_run.h"
#include "paths.h"

namespace muonplan::cli {
namespace {

struct CalibrateFlags {
  std::vector<std::string> metrics, held_out, training_runs;
  std::string topology = default_topology_path();
  std::string out;
  bool json = false, force = false;
};

// --training-run: the constants each measured figure determines, fitted over every run.
int calibrate_training(const std::string& topology, const std::vector<std::string>& runs,
                       const std::vector<std::string>& checks, const std::string& out, bool json,
                       bool force) {
  const Topology topo = load_topology(topology);
  std::vector<TrainingRun> fit, held_out;
  // A run this topology cannot plan (measured on another, or with LoRA) is named and left out.
  auto load = [&](const std::vector<std::string>& files, std::vector<TrainingRun>& into) {
    for (const std::string& file : files) {
      TrainingRun r = load_training_run(file, topo);
      if (r.skipped.empty()) {
        into.push_back(std::move(r));
      } else {
        std::fprintf(stderr, "skipped %s: %s\n", file.c_str(), r.skipped.c_str());
      }
    }
  };
  load(runs, fit);
  load(checks, held_out);
  // The files the runs name are inputs too: --out onto a run's model would replace it.
  std::vector<PathArg> in = {{"--topology", topology}};
  for (const TrainingRun& r : fit) {
    in.push_back({"--training-run", r.model_path, false, " " + r.name + "'s model"});
    in.push_back(
        {"--training-run", r.trainer_config_path, false, " " + r.name + "'s trainer_config"});
  }
  for (const TrainingRun& r : held_out) {
    in.push_back({"--check", r.model_path, false, " " + r.name + "'s model"});
    in.push_back({"--check", r.trainer_config_path, false, " " + r.name + "'s trainer_config"});
  }
  refuse_overlaps(in, {{"--out", out}});
  const TrainingFit tf = fit_training_runs(topo, fit, held_out, force);
  if (!out.empty()) {
    const std::string comment =
        "fitted by muonplan calibrate --training-run (" + std::to_string(fit.size()) + " run(s))";
    write_file_atomic(out, with_training_constants(read_input_file(resolve_topology_path(topology)),
                                                   tf, comment));
  }
  if (json) {
    nlohmann::json j = {{"topology", topology}};
    for (const TrainingConstant& k : tf.constants) {
      j["constants"][k.name] = {
          {"before", k.before}, {"after", k.after}, {"fitted", k.fitted}, {"note", k.note}};
    }
    j["residuals"] = nlohmann::json::array();
    for (const Residual& r : tf.residuals) {
      j["residuals"].push_back({{"run", r.run},
                                {"figure", r.figure},
                                {"held_out", r.held_out},
                                {"measured", r.measured},
                                {"predicted_before", r.before},
                                {"predicted_after", r.after},
                                {"rel_error_before", r.rel_error_before()},
                                {"rel_error_after", r.rel_error_after()}});
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("%-38s %10s %10s  %s\n", "constant", "before", "after", "");
  for (const TrainingConstant& k : tf.constants) {
    std::printf("%-38s %10.4g %10.4g  %s%s\n", k.name.c_str(), k.before, k.after,
                k.fitted ? "fitted: " : "", k.note.c_str());
  }
  std::printf("\n%-8s %-26s %10s %10s %8s %10s %8s  %s\n", "run", "figure", "measured", "before",
              "error", "after", "error", "file");
  for (const Residual& r : tf.residuals) {
    std::printf("%-8s %-26s %10.3f %10.3f %+7.1f%% %10.3f %+7.1f%%  %s\n",
                r.held_out ? "check" : "fit", r.figure.c_str(), r.measured, r.before,
                100 * r.rel_error_before(), r.after, 100 * r.rel_error_after(), r.run.c_str());
  }
  if (!out.empty()) std::printf("\nwrote %s\n", out.c_str());
  return 0;
}

// The fit as JSON: each constant before and after, each run's error before and after.
nlohmann::json calibration_json(const std::string& topology, const CalibrationResult& r) {
  nlohmann::json j = {
      {"topology", topology},
      {"max_fit_error", r.max_fit_error()},
      {"max_held_out_error", r.max_held_out_error()},
      {"max_held_out_error_before", r.max_held_out_error_before()},
      {"determining_figures", r.determining_figures},
      {"fit_work",
       {{"evaluations", r.fit_evaluations}, {"evaluation_bound", r.fit_evaluation_bound}}},
      {"warnings", overfit_warnings(r)}};
  for (const FittedConstant& k : r.constants) {
    j["constants"][k.name] = {
        {"before", k.before}, {"after", k.after}, {"fitted", k.fitted}, {"note", k.note}};
  }
  for (const RunCheck& run : r.runs) {
    j["runs"].push_back({{"metrics", run.name},
                         {"held_out", run.held_out},
                         {"measured_s", run.measured_s},
                         {"predicted_before_s", run.before_s},
                         {"predicted_after_s", run.after_s},
                         {"rel_error_before", run.rel_error_before()},
                         {"rel_error_after", run.rel_error_after()},
                         {"components_s", nlohmann::json::object()}});
    for (const auto& [name, measured, predicted] : run.components) {
      j["runs"].back()["components_s"][name] = {{"measured", measured},
                                                {"predicted_after", predicted}};
    }
  }
  return j;
}

bool held_out(const CalibrationResult& r) {
  for (const RunCheck& run : r.runs) {
    if (run.held_out) return true;
  }
  return false;
}

// The fit as two tables, constants and runs; `out`: where the topology was written, if anywhere.
void print_calibration(const CalibrationResult& r, const std::string& out) {
  std::printf("%-34s %12s %12s  %s\n", "constant", "before", "after", "");
  for (const FittedConstant& k : r.constants) {
    std::printf("%-34s %12.6g %12.6g  %s\n", k.name.c_str(), k.before, k.after, k.note.c_str());
  }
  std::printf("\n%-9s %10s %10s %8s %10s %8s  %s\n", "run", "measured", "before", "error", "after",
              "error", "metrics");
  for (const RunCheck& run : r.runs) {
    std::printf("%-9s %9.4fs %9.4fs %+7.1f%% %9.4fs %+7.1f%%  %s\n",
                run.held_out ? "held-out" : "fit", run.measured_s, run.before_s,
                100 * run.rel_error_before(), run.after_s, 100 * run.rel_error_after(),
                run.name.c_str());
  }
  std::printf("\nmax error after: %.1f%% on fitted runs%s\n", 100 * r.max_fit_error(),
              out.empty() ? "" : ("; wrote " + out).c_str());
  if (held_out(r)) {
    std::printf("held-out error: %.1f%% before, %.1f%% after\n",
                100 * r.max_held_out_error_before(), 100 * r.max_held_out_error());
  }
}

// The held-out runs' worst error got worse: the fit serves the fitted runs at their expense.
void refuse_worse_held_out(const CalibrationResult& r, const CalibrateFlags& f) {
  if (f.out.empty() || f.force || !held_out(r)) return;
  if (r.max_held_out_error() <= r.max_held_out_error_before()) return;
  char errors[96];
  std::snprintf(errors, sizeof errors, "%.1f%% before, %.1f%% after",
                100 * r.max_held_out_error_before(), 100 * r.max_held_out_error());
  throw InputError({}, "--out",
                   f.out + " not written: the held-out error got worse (" + errors +
                       "): the fit overfits the --metrics runs; --force writes it anyway");
}

// More constants fitted than the runs determine: the written topology would carry values the
// runs do not pin down (issue 50 item 8).
void refuse_underdetermined(const CalibrationResult& r, const CalibrateFlags& f) {
  if (f.out.empty() || f.force || !underdetermined(r)) return;
  throw InputError({}, "--out",
                   f.out +
                       " not written: the fit is underdetermined (the warning above says "
                       "what would pin it down); --force writes it anyway");
}

// The plans the metrics name are inputs too: `--out P` onto m.json's plan P replaced it.
void refuse_onto_plans(const std::string& out, const std::vector<CalibrationRun>& fit,
                       const std::vector<CalibrationRun>& held_out) {
  std::vector<PathArg> plans;
  for (const CalibrationRun& r : fit)
    plans.push_back({"--metrics", r.plan_path, false, " " + r.name + "'s plan"});
  for (const CalibrationRun& r : held_out)
    plans.push_back({"--check", r.plan_path, false, " " + r.name + "'s plan"});
  refuse_overlaps(plans, {{"--out", out}});
}

// `muonplan calibrate`: fits training runs or metrics, writes the topology, reports the fit.
int run_calibrate(const CalibrateFlags* f) {
  std::vector<PathArg> in = {{"--topology", f->topology}};
  for (const std::string& m : f->metrics) in.push_back({"--metrics", m});
  for (const std::string& m : f->training_runs) in.push_back({"--training-run", m});
  for (const std::string& m : f->held_out) in.push_back({"--check", m});
  refuse_overlaps(in, {{"--out", f->out}});
  refuse_repeated_runs({in.begin() + 1, in.end()});
  if (!f->training_runs.empty()) {
    if (!f->metrics.empty())
      throw InputError({}, "--training-run", "fits training runs or metrics, not both");
    return calibrate_training(f->topology, f->training_runs, f->held_out, f->out, f->json,
                              f->force);
  }
  if (f->metrics.empty()) throw InputError({}, "--metrics", "give --metrics or --training-run");
  const Topology topo = load_topology(f->topology);
  std::vector<CalibrationRun> fit, held_out;
  for (const std::string& m : f->metrics) fit.push_back(load_calibration_run(m));
  for (const std::string& m : f->held_out) held_out.push_back(load_calibration_run(m));
  refuse_onto_plans(f->out, fit, held_out);
  // A fit past a few seconds says how far it is (its work is bounded: fit_evaluation_bound).
  const CalibrationResult r = calibrate(topo, fit, held_out, [](const std::string& line) {
    std::cerr << "calibrate: fitting: " << line << "\n";
  });
  for (const std::string& w : overfit_warnings(r)) std::cerr << "warning: " << w << "\n";
  refuse_worse_held_out(r, *f);
  refuse_underdetermined(r, *f);
  if (!f->out.empty()) {
    const std::string comment = "fitted by `muonplan calibrate` to " + std::to_string(fit.size()) +
                                " measured run(s); max error " +
                                std::to_string(100 * r.max_fit_error()).substr(0, 4) + "%";
    std::string text = with_calibration(read_input_file(resolve_topology_path(f->topology)),
                                        r.calibration, comment);
    std::map<std::string, double> fixed;  // the fixed GPU costs, where a CUDA run gave them
    for (const FittedConstant& k : r.constants) {
      if (k.fitted && k.name.rfind("overheads.", 0) == 0) fixed[k.name] = k.after;
    }
    if (!fixed.empty()) text = with_section_constants(text, fixed, "fitted by muonplan calibrate");
    write_file_atomic(f->out, text);
  }
  if (f->json) {
    std::cout << calibration_json(f->topology, r).dump(2) << "\n";
    return 0;
  }
  print_calibration(r, f->out);
  return 0;
}

}  // namespace

Runner add_calibrate(CLI::App& app) {
  auto f = std::make_shared<CalibrateFlags>();
  CLI::App* c = app.add_subcommand(
      "calibrate", "Fit the topology's calibration constants to `muonplan execute` metrics");
  c->add_option("--metrics", f->metrics, "Metrics files to fit (muonplan execute --metrics)")
      ->check(non_empty_path());
  c->add_option("--training-run", f->training_runs,
                "Measured training steps to fit (YAML: model, layout, ..., measured:)")
      ->check(non_empty_path());
  c->add_option("--holdout,--check", f->held_out,
                "Files held out of the fit, only checked: their error before and after "
                "(metrics, or training runs with --training-run)")
      ->check(non_empty_path());
  c->add_flag("--force", f->force,
              "Write --out even when the held-out error got worse or the fit is underdetermined; "
              "with --training-run, fit a "
              "constant that one run alone determines");
  c->add_option("--topology", f->topology, "Topology to start from (YAML)")
      ->capture_default_str()
      ->check(non_empty_path());
  c->add_option("--out", f->out, "Write the calibrated topology here")->check(non_empty_path());
  c->add_flag("--json", f->json, "Machine-readable output");
  return [f]() { return run_calibrate(f.get()); };
}

}  // namespace muonplan::cli
