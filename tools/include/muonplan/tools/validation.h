// Checks the planner against published measurements (data/calibration/published.yaml;
// the figures are quoted in docs/validation.md): each row is a published figure, the planner's
// prediction for the same setting, and the tolerance the project holds itself to.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "muonplan/planner/topology.h"

namespace muonplan {

struct ValidationRow {
  std::string figure;   // e.g. "optimizer_step_s"
  std::string setting;  // e.g. "Qwen3-30B-A3B, 1 node, fsdp=8,ep=8, offload none, round-robin"
  double published = 0;
  double predicted = 0;
  double tolerance = 0;  // relative; 0: reported, not checked
  double rel_error() const { return (predicted - published) / published; }
  bool checked() const { return tolerance > 0; }
  bool ok() const { return !checked() || std::abs(rel_error()) <= tolerance; }
};

// models_dir holds <lowercased model name>.yaml for every model the file names.
std::vector<ValidationRow> validate_published(const std::string& published_path,
                                              const std::string& models_dir, const Topology& topo);

// A markdown table: figure, setting, published, predicted, error, tolerance, verdict.
std::string validation_markdown(const std::vector<ValidationRow>& rows);

}  // namespace muonplan
