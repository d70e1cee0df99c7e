// The Python module `muonplan`: the planner's commands as functions returning plain dicts with
// the command line's JSON keys (docs/cli-contract.md). Options take the CLI's flag names with
// underscores; bad input raises muonplan.InputError (a ValueError) with the CLI's one-line
// message. No logic of its own: flags go through plan_request.h like `muonplan plan`'s, and
// checkpoints go through the executor's checkpoint library (docs/checkpoint-format.md).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>

#include "keywords.h"
#include "muonplan/base/error.h"
#include "muonplan/exec/bf16.h"
#include "muonplan/exec/checkpoint.h"
#include "muonplan/exec/checkpoint_entries.h"
#include "muonplan/exec/plan_shards.h"
#include "muonplan/planner/data_dir.h"
#include "muonplan/planner/json_forms.h"
#include "muonplan/planner/model_io.h"
#include "muonplan/planner/model_resolve.h"
#include "muonplan/planner/plan.h"
#include "muonplan/planner/plan_request.h"
#include "muonplan/planner/prime_rl.h"
#include "muonplan/tools/report_data.h"

namespace py = pybind11;
using nlohmann::json;

namespace muonplan {
namespace {

py::object to_python(const json& j) {
  return py::module_::import("json").attr("loads")(j.dump());
}

// The first float under obj that is NaN or infinite: where ("key.key[3]") and its text.
std::pair<std::string, std::string> non_finite_at(py::handle obj, const std::string& at) {
  if (py::isinstance<py::float_>(obj) && !std::isfinite(obj.cast<double>()))
    return {at.empty() ? "(the value)" : at, py::repr(obj).cast<std::string>()};
  if (py::isinstance<py::dict>(obj)) {
    for (auto [key, value] : obj.cast<py::dict>()) {
      const std::string k = py::str(key).cast<std::string>();
      auto found = non_finite_at(value, at.empty() ? k : at + "." + k);
      if (!found.first.empty()) return found;
    }
  } else if (py::isinstance<py::list>(obj) || py::isinstance<py::tuple>(obj)) {
    size_t i = 0;
    for (py::handle item : obj) {
      auto found = non_finite_at(item, at + "[" + std::to_string(i++) + "]");
      if (!found.first.empty()) return found;
    }
  }
  return {};
}

// A dict as JSON text for the file readers. JSON has no NaN or infinity: json.dumps wrote NaN,
// which the reader refused with its parser's text as a RuntimeError; the dict's value is named
// instead, as an InputError ("<plan dict>: optimizer_config.lr: ... got nan").
std::string to_json_text(py::handle obj, const std::string& what) {
  if (const auto [at, text] = non_finite_at(obj, ""); !at.empty())
    throw InputError({what, 0, 0}, at,
                     "must be a finite number (JSON has no NaN or infinity), got " + text);
  return py::module_::import("json").attr("dumps")(obj, py::arg("indent") = 1).cast<std::string>();
}

// `text` (the Python string argument `arg`) as UTF-8 bytes holding no NUL, else InputError
// naming `arg`: a NUL would end the path early (".yaml\x00junk" opened ".yaml"), and a lone
// surrogate has no UTF-8 form (pybind11's cast failed with a RuntimeError).
std::string checked_text(py::handle text, const std::string& arg) {
  std::string out;
  if (py::isinstance<py::str>(text)) {
    Py_ssize_t size = 0;
    const char* utf8 = PyUnicode_AsUTF8AndSize(text.ptr(), &size);
    if (utf8 == nullptr) {
      PyErr_Clear();
      throw InputError({}, arg, "not valid UTF-8 text (a lone surrogate such as \\ud800?)");
    }
    out.assign(utf8, size_t(size));
  } else {
    out = text.cast<std::string>();  // bytes from __fspath__
  }
  if (out.find('\0') != std::string::npos) throw InputError({}, arg, "holds a NUL character");
  return out;
}

// A str or os.PathLike as a path string (checked_text); anything else is not a path.
bool as_path(py::handle obj, std::string& path, const std::string& arg) {
  if (py::isinstance<py::str>(obj) || py::hasattr(obj, "__fspath__")) {
    path = checked_text(py::module_::import("os").attr("fspath")(obj), arg);
    return true;
  }
  return false;
}

// A path (YAML spec or HF config.json), or a dict: an HF config (it has "model_type") or our
// YAML spec as a mapping. Errors name "<model dict>" where the CLI names the file; an HF dict
// is named like a config.json without a telling file name (_name_or_path, else model_type).
ModelSpec model_from(py::handle model) {
  std::string path;
  if (as_path(model, path, "model")) return resolve_model(path, {}, "model").spec;
  if (py::isinstance<py::dict>(model)) {
    const std::string text = to_json_text(model, "<model dict>");
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
  if (as_path(topology, path, "topology")) return load_topology(path);
  if (py::isinstance<py::dict>(topology)) {
    return parse_topology(to_json_text(topology, "<topology dict>"), "<topology dict>");
  }
  throw py::type_error("topology: expected a path, a dict or None");
}

// A keyword's value as the flag's text: True/False as true/false, a path as its string, a
// list or tuple as "a,b" (a list of lists as "a,b,c;d,e,f", as --ns-schedule takes it), a dict
// as "k=v,k=v" (--layout), anything else as str() gives it.
// bytes and None have no flag text: str() made b"q_proj" the module name "b'q_proj'" and None
// in a list "None", targets that matched nothing; an empty list read as the default.
std::string option_text(py::handle v, const std::string& arg) {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>() ? "true" : "false";
  if (py::isinstance<py::bytes>(v) || py::isinstance<py::bytearray>(v))
    throw InputError({}, arg, "expected str, got bytes (decode it first)");
  if (v.is_none())
    throw InputError({}, arg, "None inside a list (None means not given only as the whole value)");
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    if (py::len(v) == 0)
      throw InputError({}, arg, "an empty list; leave the keyword out (or None) for the default");
    std::string text;
    bool nested = false;
    for (py::handle e : v) {
      nested = nested || py::isinstance<py::list>(e) || py::isinstance<py::tuple>(e);
      text += (text.empty() ? "" : nested ? ";" : ",") + option_text(e, arg);
    }
    return text;
  }
  if (py::isinstance<py::dict>(v)) {
    std::string text;
    for (auto [key, value] : v.cast<py::dict>()) {
      text += (text.empty() ? "" : ",") + checked_text(py::str(key), arg) + "=" +
              option_text(value, arg);
    }
    return text;
  }
  std::string path;
  if (as_path(v, path, arg)) return path;
  return checked_text(py::str(v), arg);
}

// Keyword options to flag text; None means "not given".
std::map<std::string, std::string> option_map(const py::kwargs& options) {
  std::map<std::string, std::string> out;
  for (auto [key, value] : options) {
    if (!value.is_none()) {
      const std::string name = key.cast<std::string>();
      out[name] = option_text(value, name);
    }
  }
  return out;
}

py::object inspect(py::handle model, bool include_mtp, bool tensors) {
  return to_python(inventory_to_json(build_inventory(model_from(model)), include_mtp, tensors));
}

// trainer_config=PATH: a prime-rl config, as `muonplan plan --trainer-config` reads it; model
// may then be None (the file's [model] name) or a path, name or id overriding it.
// Ctrl-C during a search: Python's signal handler only sets a flag, which nothing reads while
// C++ runs; checked between candidates, it ends the search with KeyboardInterrupt.
void raise_pending_signal() {
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

// emit="prime-rl" (or prime-rl-sft, prime-rl-diff): the config text `plan --emit` prints, from
// the same code (emit_config, prime_rl.h); a plan that does not fit raises InputError unless force=True,
// as the CLI exits 3.
std::string emit_form(py::handle emit, py::handle force, PlanFlags& flags) {
  if (emit.is_none()) return "";
  if (!py::isinstance<py::str>(emit))
    throw py::type_error("plan(): emit: expected str or None, got " +
                         std::string(py::str(emit.get_type().attr("__name__"))) + " " +
                         py::repr(emit).cast<std::string>());
  if (!py::isinstance<py::bool_>(force))
    throw py::type_error("plan(): force: expected bool, got " +
                         py::repr(force).cast<std::string>());
  std::string form = emit.cast<std::string>();
  check_emit_form(form, flags);
  return form;
}

py::object plan_result(const EmitRequest& emit, bool force, const PlanInputs& in,
                       const Topology& topo, const Plan& p, json j) {
  if (emit.form.empty()) return to_python(j);
  if (!p.fits && !force)
    throw InputError(
        {}, "--emit",
        "the plan does not fit (" + p.reason + "); no config written; force=True writes it anyway");
  return py::str(emit_config(emit, in, topo, j));
}

py::object plan(py::handle model, py::handle topology, py::handle emit, py::handle force,
                const py::kwargs& options) {
  PlanFlags flags = plan_flags_from_map(option_map(options));
  const std::string form = emit_form(emit, force, flags);
  const bool forced = force.cast<bool>();
  const Topology topo = topology_from(topology);
  std::string path;
  if (flags.trainer_config.empty() || py::isinstance<py::dict>(model)) {
    if (model.is_none()) throw InputError({}, "--model", "is required (or trainer_config=)");
    // A dict model: no name to resolve; runs_on= as plan's --runs-on (prime_rl.h).
    PlanInputs in = prepare_plan(model_from(model), flags);
    flags = in.flags;
    in.request.between_candidates = raise_pending_signal;
    const Plan p = make_plan(in.model.spec, topo, in.request);
    if (as_path(model, path, "model")) in.model.path = path;
    return plan_result({form, path, flags}, forced, in, topo, p, plan_to_json(p));
  }
  if (!model.is_none() && !as_path(model, path, "model"))
    throw py::type_error("model: expected a path");
  PlanInputs in = prepare_plan(path, flags);
  in.request.between_candidates = raise_pending_signal;
  Plan p;
  try {
    p = make_plan(in.model.spec, topo, in.request);
  } catch (const InputError& e) {
    rethrow_at_file(in, e);  // as the CLI reports it
  }
  json j = plan_to_json(p);
  if (form.empty())
    j["trainer_config"] = trainer_answer_json(in, trainer_answer(in.model.spec, topo, in, p), p);
  return plan_result({form, path, flags}, forced, in, topo, p, std::move(j));
}

py::object cost_ns(int64_t rows, int64_t cols, int64_t batch, py::handle topology,
                   const std::string& schedule, bool symmetric) {
  check_ns_shape(batch, rows, cols);
  const Topology topo = topology_from(topology);
  return to_python(
      ns_cost_to_json(ns_cost(topo, batch, rows, cols, ns_schedule(schedule), symmetric)));
}

std::string node_counts_text(py::handle nodes) {
  // True is an int to Python: its text "true" was refused as a node count, not as a type.
  if (py::isinstance<py::bool_>(nodes))
    throw py::type_error("report(): nodes: expected int, str or list, got bool " +
                         py::repr(nodes).cast<std::string>());
  if (py::isinstance<py::list>(nodes) || py::isinstance<py::tuple>(nodes)) {
    std::string text;
    for (py::handle n : nodes) text += (text.empty() ? "" : ",") + option_text(n, "nodes");
    return text;
  }
  return option_text(nodes, "nodes");
}

py::object report(py::handle model, py::handle out, py::handle topology, py::handle nodes,
                  py::handle metrics, const py::kwargs& options) {
  std::map<std::string, std::string> map = option_map(options);
  // The CLI's report has none of these flags: it sweeps offload modes and node counts, each
  // count planned on its own (no search to bound).
  for (const auto& [key, flag] : {std::pair{"offload", "--offload"},
                                  {"max_nodes", "--max-nodes"},
                                  {"max_predictions", "--max-predictions"}}) {
    if (map.count(key)) {
      throw InputError({}, flag,
                       "not a report option: the report sweeps offload modes and node counts");
    }
  }
  const PlanFlags flags = plan_flags_from_map(map);
  std::string out_dir;
  if (!as_path(out, out_dir, "out")) throw py::type_error("out: expected a path");
  ModelSpec spec;
  PlanRequest request;
  std::string path;
  ReportInputs in;
  if (!flags.trainer_config.empty()) {  // as `muonplan report --trainer-config` reads it
    if (!model.is_none() && !as_path(model, path, "model"))
      throw py::type_error("model: expected a path or None with trainer_config");
    const PlanInputs plan_in = prepare_plan(path, flags);
    std::string note;
    request = report_request(plan_in, flags, note);
    spec = plan_in.model.spec;
    in.model_path = path.empty() ? plan_in.model.path : path;
  } else {
    if (model.is_none()) throw InputError({}, "--model", "is required (or trainer_config=)");
    spec = model_from(model);
    request = runs_on_request(flags, false);  // --runs-on's defaults and rules, as the CLI's
    in.model_path = as_path(model, path, "model") ? path : "<model dict>";
  }
  const Topology topo = topology_from(topology);
  in.topology_path = topology.is_none()                    ? default_topology()
                     : as_path(topology, path, "topology") ? path
                                                           : "<topology dict>";
  in.node_counts = nodes.is_none() ? default_node_counts(topo)
                                   : parse_node_counts(node_counts_text(nodes), topo.max_nodes);
  if (!metrics.is_none()) {
    if (as_path(metrics, path, "metrics")) {
      in.metrics.push_back(load_metrics(path));
    } else {
      for (py::handle m : metrics) in.metrics.push_back(load_metrics(option_text(m, "metrics")));
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

// A plan file path or a plan dict (muonplan.plan's result).
Plan plan_from(py::handle plan) {
  std::string path;
  if (as_path(plan, path, "plan")) return load_plan(path);
  if (py::isinstance<py::dict>(plan)) {
    json j = json::parse(to_json_text(plan, "<plan dict>"));
    j.erase("trainer_config");  // plan(trainer_config=...)'s answer: not part of the plan file
    return plan_from_json(j, "<plan dict>");
  }
  throw py::type_error("plan: expected a path or a dict");
}

std::string dir_from(py::handle dir) {
  std::string path;
  if (!as_path(dir, path, "dir")) throw py::type_error("dir: expected a path");
  return path;
}

// Whole tensors by entry name, as float32 arrays; bf16 is widened exactly (its bits are the
// upper half of a float32's).
py::dict read_checkpoint(py::handle dir) {
  const std::string path = dir_from(dir);
  exec::WholeCheckpoint w;
  try {
    w = exec::read_whole_checkpoint(path);
  } catch (const InputError& e) {
    throw exec::load_error_while_saving(path, e);  // a run saving into it as it was read
  }
  py::dict tensors;
  for (const exec::WholeEntry& e : w.entries) {
    py::array_t<float> a(std::vector<py::ssize_t>(e.shape.begin(), e.shape.end()));
    float* out = a.mutable_data();
    const size_t n = static_cast<size_t>(a.size());
    if (e.dtype == exec::kCheckpointBf16.entry) {
      const auto* in = reinterpret_cast<const exec::bf16*>(e.bytes.data());
      for (size_t k = 0; k < n; ++k) out[k] = exec::to_float(in[k]);
    } else {
      std::memcpy(out, e.bytes.data(), n * sizeof(float));
    }
    tensors[py::str(e.name)] = a;
  }
  py::dict result;
  result["step"] = w.step;
  result["tensors"] = tensors;
  return result;
}

using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;

// `value` as float32: real numbers only. numpy would cast a complex array's real part (the
// imaginary one lost) and an object array's None to NaN; both are refused naming the tensor.
FloatArray float_array(const std::string& name, py::handle value) {
  py::array given = py::array::ensure(value);
  if (!given) throw py::value_error(name + ": not convertible to a float32 array");
  const char kind = given.dtype().kind();
  if (kind != 'f' && kind != 'i' && kind != 'u' && kind != 'b') {
    throw py::value_error(name + ": an array of dtype " +
                          py::str(given.dtype()).cast<std::string>() +
                          "; a checkpoint holds real numbers (float32)");
  }
  FloatArray a = FloatArray::ensure(given);
  if (!a) throw py::value_error(name + ": not convertible to a float32 array");
  return a;
}

// Whole tensors as float32 arrays into exec::write_whole_checkpoint, which cuts them into the
// plan's shards and checks every name, shape and value (checkpoint.h); its InputError names
// the entry.
void write_checkpoint(py::handle dir, const py::dict& tensors, int64_t step, py::handle plan_arg) {
  const std::string path = dir_from(dir);
  const Plan plan = plan_from(plan_arg);
  std::map<std::string, FloatArray> arrays;  // kept alive while the writer reads them
  std::map<std::string, exec::WholeTensorIn> given;
  for (auto [key, value] : tensors) {
    const std::string name = py::str(key).cast<std::string>();
    FloatArray a = float_array(name, value);
    given[name] = {std::vector<int64_t>(a.shape(), a.shape() + a.ndim()), a.data()};
    arrays.emplace(name, std::move(a));
  }
  exec::write_whole_checkpoint(path, plan, step, given);
}

}  // namespace
}  // namespace muonplan

PYBIND11_MODULE(muonplan, m) {
  using namespace muonplan;
  m.doc() =
      "muonplan: plan the sharded Muon optimizer step (docs/python.md). Functions return the "
      "command line's JSON as dicts; bad input raises InputError, a ValueError whose message "
      "is the CLI's one line.";
  // InputError's message names the Python keyword where the CLI's names the flag (--lr -> lr).
  static py::exception<InputError> input_error(m, "InputError", PyExc_ValueError);
  input_error.attr("__doc__") =
      "Bad input: a value, file or combination the command line would refuse. A ValueError "
      "whose message is the CLI's one line (FILE:LINE:COL: key: why, or keyword: why), with "
      "each --flag written as its Python keyword. Types are checked before the values: a "
      "keyword given the wrong type raises TypeError instead.";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InputError& e) {
      PyErr_SetString(input_error.ptr(), keyword_message(e.what()).c_str());
    }
  });
  m.attr("__version__") = MUONPLAN_VERSION;
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
  m.def("_plan", &plan, py::arg("model") = py::none(), py::arg("topology") = py::none(),
        py::arg("emit") = py::none(), py::arg("force") = false);
  m.attr("plan") = keyword_function(
      "plan", m.attr("_plan"),
      py::cast(
          std::vector<std::pair<std::string, py::object>>{{"model", py::none()},
                                                          {"topology", py::none()},
                                                          {"emit", py::none()},
                                                          {"force", py::bool_(false)}}),
      true,
      "Plan a model: the dict `muonplan plan --json` prints. model: a path (YAML spec, "
      "config.json or its directory), a bundled name, an HF id, or a dict; topology: a path, a "
      "dict or None (the bundled h200-ib). trainer_config=PATH plans a prime-rl config "
      "(model=None: its [model] name) and adds the answer under 'trainer_config'. emit='prime-rl' "
      "(or 'prime-rl-sft', 'prime-rl-diff') returns the config text `plan --emit` prints "
      "instead; a plan that does not fit raises InputError unless force=True.");
  m.def("cost_ns", &cost_ns, py::arg("rows"), py::arg("cols"), py::arg("batch") = 1,
        py::arg("topology") = py::none(), py::arg("ns_schedule") = "quintic",
        py::arg("symmetric") = false,
        "Predicted time of one batched Newton-Schulz call: `muonplan cost ns --json`.");
  m.def("_report", &report, py::arg("model"), py::arg("out"), py::arg("topology") = py::none(),
        py::arg("nodes") = py::none(), py::arg("metrics") = py::none());
  m.attr("report") = keyword_function(
      "report", m.attr("_report"),
      py::cast(std::vector<std::pair<std::string, py::object>>{{"model", py::none()},
                                                               {"out", py::none()},
                                                               {"topology", py::none()},
                                                               {"nodes", py::none()},
                                                               {"metrics", py::none()}}),
      false,
      "Write the capacity report (`muonplan report`) into `out`; nodes: 'A..B', 'A,B', an "
      "int or a list; metrics: a path or a list of paths. Returns the paths written and the "
      "report data.");
  m.def("read_checkpoint", &read_checkpoint, py::arg("dir"),
        "Read a checkpoint of `muonplan execute --checkpoint` (any world size or layout): "
        "{'step': int, 'tensors': {'<param>/param' | '/momentum' | '/variance': whole numpy "
        "float32 array}}; bf16 momentum is widened to float32 exactly.");
  m.def("write_checkpoint", &write_checkpoint, py::arg("dir"), py::arg("tensors"), py::arg("step"),
        py::arg("plan"),
        "Write whole tensors as a checkpoint for `plan` (a plan file path or muonplan.plan's "
        "dict), sharded as its ranks hold them, so `muonplan execute --resume dir` starts from "
        "them at step + 1. tensors: '<param>/param' for every tensor of the plan's model "
        "(float32, or anything numpy casts to it); '/momentum' and (AdamW) '/variance' default "
        "to zeros.");
}
