// The Python module `muonplan`: the planner's commands as functions returning plain dicts with
// the command line's JSON keys (docs/cli-contract.md). Options take the CLI's flag names with
// underscores; bad input raises muonplan.InputError (a ValueError) with the CLI's one-line
// message. No logic of its own: flags go through plan_request.h like `muonplan plan`'s.
#include <pybind11/pybind11.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>

#include "muonplan/data_dir.h"
#include "muonplan/error.h"
#include "muonplan/json_forms.h"
#include "muonplan/model_io.h"
#include "muonplan/plan.h"
#include "muonplan/plan_request.h"
#include "muonplan/report_data.h"

namespace py = pybind11;
using nlohmann::json;

namespace muonplan {
namespace {

py::object to_python(const json& j) {
  return py::module_::import("json").attr("loads")(j.dump());
}

std::string to_json_text(py::handle obj) {
  return py::module_::import("json").attr("dumps")(obj, py::arg("indent") = 1).cast<std::string>();
}

// A str or os.PathLike as a path string; anything else is not a path.
bool as_path(py::handle obj, std::string& path) {
  if (py::isinstance<py::str>(obj) || py::hasattr(obj, "__fspath__")) {
    path = py::module_::import("os").attr("fspath")(obj).cast<std::string>();
    return true;
  }
  return false;
}

// A path (YAML spec or HF config.json), or a dict: an HF config (it has "model_type") or our
// YAML spec as a mapping. Errors name "<model dict>" where the CLI names the file; an HF dict
// is named like a config.json without a telling file name (_name_or_path, else model_type).
ModelSpec model_from(py::handle model) {
  std::string path;
  if (as_path(model, path)) return load_model(path);
  if (py::isinstance<py::dict>(model)) {
    const std::string text = to_json_text(model);
    if (model.cast<py::dict>().contains("model_type")) {
      return parse_hf_config(text, "<model dict>/config.json");
    }
    return parse_model_yaml(text, "<model dict>");
  }
  throw py::type_error("model: expected a path or a dict");
}

std::string default_topology() {
  return data_path("topologies/h200-ib.yaml");
}

Topology topology_from(py::handle topology) {
  std::string path;
  if (topology.is_none()) return load_topology(default_topology());
  if (as_path(topology, path)) return load_topology(path);
  if (py::isinstance<py::dict>(topology)) {
    return parse_topology(to_json_text(topology), "<topology dict>");
  }
  throw py::type_error("topology: expected a path, a dict or None");
}

std::string option_text(py::handle v) {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>() ? "true" : "false";
  std::string path;
  if (as_path(v, path)) return path;
  return py::str(v).cast<std::string>();
}

// Keyword options to flag text; None means "not given".
std::map<std::string, std::string> option_map(const py::kwargs& options) {
  std::map<std::string, std::string> out;
  for (auto [key, value] : options) {
    if (!value.is_none()) out[key.cast<std::string>()] = option_text(value);
  }
  return out;
}

py::object inspect(py::handle model, bool include_mtp, bool tensors) {
  return to_python(inventory_to_json(build_inventory(model_from(model)), include_mtp, tensors));
}

py::object plan(py::handle model, py::handle topology, const py::kwargs& options) {
  const PlanFlags flags = plan_flags_from_map(option_map(options));
  const ModelSpec spec = model_from(model);
  const Topology topo = topology_from(topology);
  return to_python(plan_to_json(make_plan(spec, topo, to_plan_request(flags))));
}

py::object cost_ns(int64_t rows, int64_t cols, int64_t batch, py::handle topology,
                   const std::string& schedule, bool symmetric) {
  check_ns_shape(batch, rows, cols);
  const Topology topo = topology_from(topology);
  return to_python(
      ns_cost_to_json(ns_cost(topo, batch, rows, cols, ns_schedule(schedule), symmetric)));
}

std::string node_counts_text(py::handle nodes) {
  if (py::isinstance<py::list>(nodes) || py::isinstance<py::tuple>(nodes)) {
    std::string text;
    for (py::handle n : nodes) text += (text.empty() ? "" : ",") + option_text(n);
    return text;
  }
  return option_text(nodes);
}

py::object report(py::handle model, py::handle out, py::handle topology, py::handle nodes,
                  py::handle metrics, const py::kwargs& options) {
  std::map<std::string, std::string> map = option_map(options);
  for (const char* swept : {"offload", "max_nodes"}) {
    if (map.count(swept)) {
      throw InputError({}, std::string("--") + (swept[0] == 'o' ? "offload" : "max-nodes"),
                       "not a report option: the report sweeps offload modes and node counts");
    }
  }
  const PlanFlags flags = plan_flags_from_map(map);
  std::string out_dir;
  if (!as_path(out, out_dir)) throw py::type_error("out: expected a path");
  const ModelSpec spec = model_from(model);
  const Topology topo = topology_from(topology);
  const PlanRequest request = to_plan_request(flags);
  ReportInputs in;
  std::string path;
  in.model_path = as_path(model, path) ? path : "<model dict>";
  in.topology_path = topology.is_none()        ? default_topology()
                     : as_path(topology, path) ? path
                                               : "<topology dict>";
  in.node_counts = nodes.is_none() ? default_node_counts(topo)
                                   : parse_node_counts(node_counts_text(nodes), topo.max_nodes);
  if (!metrics.is_none()) {
    if (as_path(metrics, path)) {
      in.metrics.push_back(load_metrics(path));
    } else {
      for (py::handle m : metrics) in.metrics.push_back(load_metrics(option_text(m)));
    }
  }
  const json data = report_data(spec, topo, request, in);
  render_report(data, out_dir, data_path("reports/report.py"));
  py::list plots;
  std::vector<std::string> pngs;
  for (const auto& entry : std::filesystem::directory_iterator(out_dir)) {
    if (entry.path().extension() == ".png") pngs.push_back(entry.path().string());
  }
  std::sort(pngs.begin(), pngs.end());
  for (const std::string& p : pngs) plots.append(p);
  py::dict result;
  result["report_md"] = (std::filesystem::path(out_dir) / "report.md").string();
  result["report_data"] = (std::filesystem::path(out_dir) / "report-data.json").string();
  result["plots"] = plots;
  result["data"] = to_python(data);
  return result;
}

}  // namespace
}  // namespace muonplan

PYBIND11_MODULE(muonplan, m) {
  using namespace muonplan;
  m.doc() =
      "muonplan: plan the sharded Muon optimizer step (docs/python.md). Functions return the "
      "command line's JSON as dicts; bad input raises InputError, a ValueError whose message "
      "is the CLI's one line.";
  py::register_exception<InputError>(m, "InputError", PyExc_ValueError);
  py::list names;
  for (std::string name : plan_flag_names()) {
    std::replace(name.begin(), name.end(), '-', '_');
    names.append(name);
  }
  m.attr("plan_options") = names;
  m.def("inspect", &inspect, py::arg("model"), py::arg("include_mtp") = false,
        py::arg("tensors") = false,
        "Parameter inventory of a model (path, HF config dict or spec dict): the keys of "
        "`muonplan inspect --json`.");
  m.def("plan", &plan, py::arg("model"), py::arg("topology") = py::none(),
        "Plan a model: the dict `muonplan plan --json` prints. Options are the plan flags with "
        "underscores (nodes='auto' or an int, offload, layout, optimizer, owners, "
        "bf16_momentum=True, ...; see muonplan.plan_options).");
  m.def("cost_ns", &cost_ns, py::arg("rows"), py::arg("cols"), py::arg("batch") = 1,
        py::arg("topology") = py::none(), py::arg("ns_schedule") = "quintic",
        py::arg("symmetric") = false,
        "Predicted time of one batched Newton-Schulz call: `muonplan cost ns --json`.");
  m.def("report", &report, py::arg("model"), py::arg("out"), py::arg("topology") = py::none(),
        py::arg("nodes") = py::none(), py::arg("metrics") = py::none(),
        "Write the capacity report (`muonplan report`) into `out`; nodes: 'A..B', 'A,B', an "
        "int or a list; metrics: a path or a list of paths. Returns the paths written and the "
        "report data.");
}
