// muonplan validate: the planner's predictions beside published measurements.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "muonplan/planner/data_dir.h"
#include "muonplan/tools/validation.h"

namespace muonplan::cli {
namespace {

struct ValidateFlags {
  std::string published = data_path("calibration/published.yaml");
  std::string models = data_path("models");
  std::string topology = default_topology_path();
  bool json = false, markdown = false;
};

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
  return [f]() {
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
