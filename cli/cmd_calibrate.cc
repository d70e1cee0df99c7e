// muonplan calibrate: fit the topology's calibration constants to measured executor runs and
// write the calibrated topology (docs/planner.md, "Calibration").
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "muonplan/calibrate.h"
#include "muonplan/error.h"
#include "muonplan/io.h"
#include "paths.h"

namespace muonplan::cli {
namespace {

struct CalibrateFlags {
  std::vector<std::string> metrics, held_out;
  std::string topology = default_topology_path();
  std::string out;
  bool json = false;
};

}  // namespace

Runner add_calibrate(CLI::App& app) {
  auto f = std::make_shared<CalibrateFlags>();
  CLI::App* c = app.add_subcommand(
      "calibrate", "Fit the topology's calibration constants to `muonplan execute` metrics");
  c->add_option("--metrics", f->metrics, "Metrics files to fit (muonplan execute --metrics)")
      ->required()
      ->check(non_empty_path());
  c->add_option("--check", f->held_out, "Metrics files held out of the fit, only checked")
      ->check(non_empty_path());
  c->add_option("--topology", f->topology, "Topology to start from (YAML)")
      ->capture_default_str()
      ->check(non_empty_path());
  c->add_option("--out", f->out, "Write the calibrated topology here")->check(non_empty_path());
  c->add_flag("--json", f->json, "Machine-readable output");
  return [f]() {
    std::vector<PathArg> in = {{"--topology", f->topology}};
    for (const std::string& m : f->metrics) in.push_back({"--metrics", m});
    for (const std::string& m : f->held_out) in.push_back({"--check", m});
    refuse_overlaps(in, {{"--out", f->out}});
    const Topology topo = load_topology(f->topology);
    std::vector<CalibrationRun> fit, held_out;
    for (const std::string& m : f->metrics) fit.push_back(load_calibration_run(m));
    for (const std::string& m : f->held_out) held_out.push_back(load_calibration_run(m));
    const CalibrationResult r = calibrate(topo, fit, held_out);
    if (!f->out.empty()) {
      const std::string comment = "fitted by `muonplan calibrate` to " +
                                  std::to_string(fit.size()) + " measured run(s); max error " +
                                  std::to_string(100 * r.max_fit_error()).substr(0, 4) + "%";
      write_file_atomic(f->out,
                        with_calibration(read_input_file(f->topology), r.calibration, comment));
    }
    if (f->json) {
      nlohmann::json j = {{"topology", f->topology},
                          {"max_fit_error", r.max_fit_error()},
                          {"max_held_out_error", r.max_held_out_error()}};
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
      std::cout << j.dump(2) << "\n";
      return 0;
    }
    std::printf("%-24s %12s %12s  %s\n", "constant", "before", "after", "");
    for (const FittedConstant& k : r.constants) {
      std::printf("%-24s %12.6g %12.6g  %s\n", k.name.c_str(), k.before, k.after, k.note.c_str());
    }
    std::printf("\n%-9s %10s %10s %8s %10s %8s  %s\n", "run", "measured", "before", "error",
                "after", "error", "metrics");
    for (const RunCheck& run : r.runs) {
      std::printf("%-9s %9.4fs %9.4fs %+7.1f%% %9.4fs %+7.1f%%  %s\n",
                  run.held_out ? "held-out" : "fit", run.measured_s, run.before_s,
                  100 * run.rel_error_before(), run.after_s, 100 * run.rel_error_after(),
                  run.name.c_str());
    }
    std::printf("\nmax error after: %.1f%% on fitted runs, %.1f%% held out%s\n",
                100 * r.max_fit_error(), 100 * r.max_held_out_error(),
                f->out.empty() ? "" : ("; wrote " + f->out).c_str());
    return 0;
  };
}

}  // namespace muonplan::cli
