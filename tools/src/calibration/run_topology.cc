// A training run's `topology:` (training_run.h): the file it names and whether it is the
// topology being fitted. Matched by what it loads to, not by its spelling (issue 50 item 6:
// `topology: topologies/h200-ib.yaml` was skipped as "measured on another topology").
#include <filesystem>

#include "muonplan/base/io.h"
#include "muonplan/planner/topology.h"
#include "muonplan/planner/yaml_reader.h"
#include "muonplan/tools/training_run.h"

namespace muonplan {
namespace {

namespace fs = std::filesystem;

// A run's `topology:` as a file beside the run, else as written (a path or a bundled name).
std::string topology_reference(const std::string& t, const std::string& run_path) {
  const fs::path here = fs::path(run_path).parent_path() / t;
  std::error_code ec;
  return fs::exists(here, ec) ? here.string() : t;
}

}  // namespace

std::string training_run_topology(const std::string& path) {
  const detail::YamlMap root(detail::parse_yaml_text(read_input_file(path), path), path, "");
  return root.has("topology") ? topology_reference(root.get_string("topology"), path) : "";
}

std::string topology_skip_reason(const std::string& t, const Topology& topo,
                                 const std::string& run_path) {
  std::string loaded = t;
  try {
    if (t != topo.name) loaded = load_topology(topology_reference(t, run_path)).name;
  } catch (const std::exception&) {  // not a topology file: the name as written
  }
  if (loaded == topo.name) return "";
  return "measured on " + t + (loaded == t ? "" : " (" + loaded + ")") + ", not " + topo.name;
}

}  // namespace muonplan
