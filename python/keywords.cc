// plan() and report() as Python functions whose keyword options are the rows of the one
// option table (plan_flag_table.h): help(muonplan.plan) lists each with its type, default and
// help, an unknown keyword is Python's TypeError, and an InputError names the keyword
// (lr=...) where the command line names its flag (--lr).
#include "keywords.h"

#include <pybind11/eval.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include "muonplan/planner/plan_flag_table.h"
#include "muonplan/planner/plan_request.h"

namespace py = pybind11;

namespace muonplan {
namespace {

// Python's spelling of a flag's type and default.
const char* annotation(const PlanFlagInfo& o) {
  if (o.name == "nodes") return "int | str";
  if (o.name == "layout") return "str | dict";
  if (o.name == "lora-targets") return "str | list[str]";
  if (o.name == "ns-schedule") return "str | list[tuple[float, float, float]]";
  if (o.type == "INT") return "int";
  if (o.type == "FLOAT") return "float";
  if (o.type == "BOOL") return "bool";
  if (o.type == "PATH") return "str | os.PathLike";
  if (o.type == "FLOAT,FLOAT") return "str | tuple[float, float]";
  return "str";
}

// The Python types a keyword takes, checked before its value becomes flag text (issue 50
// item 9): `nodes=True` was the text "true", `lr="0.01"` the number 0.01. Read off the
// annotation, so the two cannot disagree: int (not bool), float (int or float, not bool),
// bool, str, path (str or os.PathLike), dict, list (list or tuple).
std::string accepted_kinds(const PlanFlagInfo& o) {
  static const std::map<std::string, std::string> kKinds = {
      {"int", "int"},          {"float", "float"}, {"bool", "bool"}, {"str", "str"},
      {"os.PathLike", "path"}, {"dict", "dict"},   {"list", "list"}, {"tuple", "list"}};
  const std::string a = annotation(o);
  std::string kinds;
  for (size_t at = 0; at < a.size();) {  // each alternative's head: "list[str]" -> list
    const size_t end = std::min(a.find(" | ", at), a.size());
    const std::string alt = a.substr(at, end - at);
    kinds += (kinds.empty() ? "" : ",") + kKinds.at(alt.substr(0, alt.find('[')));
    at = end + 3;
  }
  return kinds;
}

py::object default_value(const PlanFlagInfo& o) {
  if (o.type == "BOOL") return py::bool_(false);
  if (o.default_text.empty()) return py::none();
  if (o.type == "INT") return py::int_(std::stoll(o.default_text));
  if (o.type == "FLOAT") return py::float_(std::stod(o.default_text));
  return py::str(o.default_text);
}

// The wrapper: binds the call to the signature (TypeError for an unknown keyword), passes on
// the options given other than their defaults, and documents every option.
const char* kWrapper = R"PY(
import inspect
import numbers
import os

def is_kind(v, kind):
    if kind == "bool":
        return isinstance(v, bool)
    if isinstance(v, bool):  # a bool is an int to Python, never a number or a name here
        return False
    return {"int": lambda: isinstance(v, numbers.Integral),
            "float": lambda: isinstance(v, numbers.Real),
            "str": lambda: isinstance(v, str),
            "path": lambda: isinstance(v, (str, os.PathLike)),
            "dict": lambda: isinstance(v, dict),
            "list": lambda: isinstance(v, (list, tuple))}[kind]()

def check_type(name, keyword, v, kinds):
    # bytes go on to the value's own message ("expected str, got bytes (decode it first)").
    if isinstance(v, (bytes, bytearray)) or any(is_kind(v, k) for k in kinds):
        return
    raise TypeError(f"{name}(): {keyword}: expected {' or '.join(kinds)}, "
                    f"got {type(v).__name__} {v!r}")

def make(name, impl, fixed, options, doc):
    P = inspect.Parameter
    params = [P(n, P.POSITIONAL_OR_KEYWORD, default=d) for n, d in fixed]
    params += [P(k, P.KEYWORD_ONLY, default=d, annotation=t) for k, t, d, h, a in options]
    sig = inspect.Signature(params)
    defaults = {k: d for k, t, d, h, a in options}
    accepted = {k: a.split(",") for k, t, d, h, a in options}

    def call(*args, **kwargs):
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{name}(): {e}") from None
        for k, v in bound.arguments.items():
            if k in accepted and v is not None:
                check_type(name, k, v, accepted[k])
        given = {k: v for k, v in bound.arguments.items()
                 if k in defaults and v is not None and not (type(v) is type(defaults[k]) and v == defaults[k])}
        return impl(*[bound.arguments.get(n, d) for n, d in fixed], **given)

    call.__name__ = call.__qualname__ = name
    call.__module__ = "muonplan"
    call.__signature__ = sig
    lines = [f"    {k}: {t} = {d!r}\n        {h}" for k, t, d, h, a in options]
    call.__doc__ = (doc + "\n\nKeyword options (the command line's flags with underscores; "
                    "None: not given):\n" + "\n".join(lines))
    return call
)PY";

}  // namespace

std::string keyword_message(const std::string& message) {
  static const std::set<std::string> known = [] {
    // plan()'s own keywords besides the plan flags: emit= and force= (the CLI's --emit, --force).
    std::set<std::string> names = {"model", "topology", "emit", "force"};
    for (const std::string& n : plan_flag_names()) names.insert(n);
    return names;
  }();
  static const std::regex flag("--([a-z0-9][a-z0-9-]*)");
  std::string out;
  auto at = message.cbegin();
  for (std::sregex_iterator it(message.begin(), message.end(), flag), end; it != end; ++it) {
    const std::string name = (*it)[1];
    out.append(at, (*it)[0].first);
    if (known.count(name)) {
      std::string keyword = name;
      std::replace(keyword.begin(), keyword.end(), '-', '_');
      out += keyword;
    } else {
      out += (*it)[0].str();
    }
    at = (*it)[0].second;
  }
  out.append(at, message.cend());
  return out;
}

py::object keyword_function(const char* name, py::object impl, py::list fixed, bool search,
                            const std::string& doc) {
  py::list options;
  for (const PlanFlagInfo& o : plan_flag_table()) {
    if (o.search_only && !search) continue;
    std::string keyword = o.name;
    std::replace(keyword.begin(), keyword.end(), '-', '_');
    options.append(py::make_tuple(keyword, annotation(o), default_value(o), keyword_message(o.help),
                                  accepted_kinds(o)));
  }
  py::dict ns;  // called once per function, at import
  py::exec(kWrapper, ns);
  return ns["make"](name, impl, fixed, options, doc);
}

}  // namespace muonplan
