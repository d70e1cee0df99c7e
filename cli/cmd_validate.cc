// muonplan validate: the planner's predictions beside published measurements.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "muonplan/planner/data_dir.h"
#include "muonplan/tools/training_run.h"
#include "muonplan/tools/validation.h"

namespace muonplan::cli {
namespace {

struct ValidateFlags {
  std::string published = data_path("calibration/published.yaml");
  std::string models = data_path("models");
  std::string topology = default_topology_path();
  std::vector<std::string> training_runs;
  double step_tolerance = 0.15, memory_tolerance = 0.10;
  bool json = false, markdown = false;
};

double rel(const std::optional<double>& predicted, const std::optional<double>& measured) {
  return *predicted / *measured - 1;
}

// --training-run: each measured run planned on its own topology, nothing fitted. Exit 1 when a
// figure leaves its tolerance or a fit verdict is wrong (an OOM run that fits the card, a run
// that ran and does not).
int validate_training_runs(const ValidateFlags& f) {
  std::vector<TrainingRunCheck> rows;
  for (const std::string& file : f.training_runs) {
    const std::string t = training_run_topology(file);
    const Topology topo = load_topology(t.empty() ? f.topology : t);
    rows.push_back(check_training_run(load_training_run(file, topo), topo));
  }
  int step_n = 0, step_ok = 0, mem_n = 0, mem_ok = 0, verdict_ok = 0;
  auto within = [](const std::optional<double>& p, const std::optional<double>& m, double tol) {
    return std::abs(*p / *m - 1) <= tol;
  };
  for (const TrainingRunCheck& r : rows) {
    if (r.measured_step_s)
      step_n++, step_ok += within(r.predicted_step_s, r.measured_step_s, f.step_tolerance);
    if (r.measured_gpu_gib)
      mem_n++, mem_ok += within(r.predicted_gpu_gib, r.measured_gpu_gib, f.memory_tolerance);
    verdict_ok += r.verdict_right();
  }
  if (f.json) {
    nlohmann::json j = {{"runs", nlohmann::json::array()}};
    for (const TrainingRunCheck& r : rows) {
      nlohmann::json x = {{"run", r.run},
                          {"topology", r.topology},
                          {"setting", r.setting},
                          {"oom", r.oom},
                          {"verdict", r.verdict()},
                          {"verdict_right", r.verdict_right()},
                          {"gpu_peak_gib", r.gpu_peak_gib},
                          {"gpu_limit_gib", r.gpu_limit_gib},
                          {"between_steps_s", r.predicted_between_steps_s}};
      if (r.measured_step_s)
        x["step_s"] = {{"measured", *r.measured_step_s},
                       {"predicted", *r.predicted_step_s},
                       {"rel_error", rel(r.predicted_step_s, r.measured_step_s)}};
      if (r.measured_gpu_gib)
        x["gpu_gib"] = {{"measured", *r.measured_gpu_gib},
                        {"predicted", *r.predicted_gpu_gib},
                        {"rel_error", rel(r.predicted_gpu_gib, r.measured_gpu_gib)}};
      j["runs"].push_back(x);
    }
    j["summary"] = {{"step_within", step_ok},
                    {"step_runs", step_n},
                    {"gpu_within", mem_ok},
                    {"gpu_runs", mem_n},
                    {"verdicts_right", verdict_ok},
                    {"runs", rows.size()},
                    {"step_tolerance", f.step_tolerance},
                    {"memory_tolerance", f.memory_tolerance}};
    std::cout << j.dump(2) << "\n";
  } else {
    const char* fmt = f.markdown ? "| %s | %s | %s | %s | %s | %s | %s | %s |\n"
                                 : "%-62s %8s %8s %7s %8s %8s %7s  %s\n";
    if (f.markdown)
      std::printf(
          "| run | step s | predicted | error | GPU GiB | predicted | error | verdict |\n| --- | "
          "---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
    else
      std::printf(fmt, "run", "step s", "pred", "error", "GPU GiB", "pred", "error", "verdict");
    auto num = [](const std::optional<double>& v) {
      if (!v) return std::string("-");
      char b[32];
      std::snprintf(b, sizeof b, "%.2f", *v);
      return std::string(b);
    };
    auto err = [](const std::optional<double>& p, const std::optional<double>& m) {
      if (!m) return std::string("-");
      char b[32];
      std::snprintf(b, sizeof b, "%+.1f%%", 100 * rel(p, m));
      return std::string(b);
    };
    for (const TrainingRunCheck& r : rows) {
      const std::string name = std::filesystem::path(r.run).stem().string();
      const std::string verdict = std::string(r.verdict()) + (r.oom ? " (measured: OOM)" : "") +
                                  (r.verdict_right() ? "" : "  WRONG");
      std::printf(fmt, name.c_str(), r.measured_step_s ? num(r.measured_step_s).c_str() : "-",
                  num(r.predicted_step_s).c_str(),
                  err(r.predicted_step_s, r.measured_step_s).c_str(),
                  r.measured_gpu_gib ? num(r.measured_gpu_gib).c_str() : "-",
                  num(r.predicted_gpu_gib).c_str(),
                  err(r.predicted_gpu_gib, r.measured_gpu_gib).c_str(), verdict.c_str());
    }
    std::printf(
        "%sstep time within %.0f%%: %d of %d; GPU peak within %.0f%%: %d of %d; fit verdicts "
        "right: %d of %zu\n",
        f.markdown ? "\n" : "\n", 100 * f.step_tolerance, step_ok, step_n, 100 * f.memory_tolerance,
        mem_ok, mem_n, verdict_ok, rows.size());
  }
  const bool ok = step_ok == step_n && mem_ok == mem_n && size_t(verdict_ok) == rows.size();
  return ok ? 0 : 1;
}

}  // namespace

Runner add_validate(CLI::App& app) {
  auto f = std::make_shared<ValidateFlags>();
  CLI::App* c = app.add_subcommand("validate", "Compare predictions with published measurements");
  c->add_option("--published", f->published, "Published figures (YAML)")->capture_default_str();
  c->add_option("--models", f->models, "Folder of model specs named after the figures' models")
      ->capture_default_str();
  c->add_option("--topology", f->topology, "Cluster description (YAML)")->capture_default_str();
  c->add_flag("--json", f->json, "Machine-readable output");
  c->add_flag("--markdown", f->markdown, "A markdown table (docs/validation.md)");
  c->add_option("--training-run", f->training_runs,
                "Measured training runs (YAML, as calibrate --training-run reads them): each "
                "planned on the topology it names, beside its measured step time, GPU peak and "
                "fit verdict; nothing fitted")
      ->check(CLI::ExistingFile);
  c->add_option("--step-tolerance", f->step_tolerance,
                "With --training-run: the step time's tolerance (relative)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 10.0));
  c->add_option("--memory-tolerance", f->memory_tolerance,
                "With --training-run: the GPU peak's tolerance (relative)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 10.0));
  return [f]() {
    if (!f->training_runs.empty()) return validate_training_runs(*f);
    const std::vector<ValidationRow> rows =
        validate_published(f->published, f->models, load_topology(f->topology));
    bool all_ok = true;
    for (const ValidationRow& r : rows) all_ok = all_ok && r.ok();
    if (f->json) {
      nlohmann::json j = nlohmann::json::array();
      for (const ValidationRow& r : rows) {
        j.push_back({{"figure", r.figure},
                     {"setting", r.setting},
                     {"published", r.published},
                     {"predicted", r.predicted},
                     {"rel_error", r.rel_error()},
                     {"tolerance", r.tolerance},
                     {"ok", r.ok()}});
      }
      std::cout << j.dump(2) << "\n";
    } else if (f->markdown) {
      std::cout << validation_markdown(rows);
    } else {
      for (const ValidationRow& r : rows) {
        std::printf("%-26s %9.3f published %9.3f predicted %+6.1f%%  %s  %s\n", r.figure.c_str(),
                    r.published, r.predicted, 100 * r.rel_error(),
                    r.checked() ? (r.ok() ? "ok  " : "FAIL") : "-   ", r.setting.c_str());
      }
    }
    return all_ok ? 0 : 1;
  };
}

}  // namespace muonplan::cli
