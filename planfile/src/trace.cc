// Chrome trace-event JSON (trace.h). Timestamps are microseconds, as the format specifies.
#include "muonplan/planfile/trace.h"

#include <algorithm>

#include "muonplan/base/error.h"
#include "muonplan/planfile/plan_file.h"

namespace muonplan {
namespace {

using json = nlohmann::json;

// The track of the training step's phases, beside the resources' tracks.
constexpr int kPhaseTid = kResourceCount;

Resource resource_named(const std::string& name, const std::string& path) {
  for (int r = 0; r < kResourceCount; ++r) {
    if (name == to_string(Resource(r))) return Resource(r);
  }
  throw InputError({path, 0, 0}, "traceEvents", "unknown resource track '" + name + "'");
}

}  // namespace

json trace_json(const std::vector<TraceEvent>& events,
                const std::vector<std::string>& process_names) {
  json out = json::array();
  std::vector<int> pids;
  for (const TraceEvent& e : events) {
    if (std::find(pids.begin(), pids.end(), e.pid) == pids.end()) pids.push_back(e.pid);
  }
  std::sort(pids.begin(), pids.end());
  for (int pid : pids) {
    if (pid < int(process_names.size())) {
      out.push_back({{"ph", "M"},
                     {"name", "process_name"},
                     {"pid", pid},
                     {"args", {{"name", process_names[pid]}}}});
    }
    for (int r = 0; r < kResourceCount; ++r) {
      out.push_back({{"ph", "M"},
                     {"name", "thread_name"},
                     {"pid", pid},
                     {"tid", r},
                     {"args", {{"name", to_string(Resource(r))}}}});
      out.push_back({{"ph", "M"},
                     {"name", "thread_sort_index"},
                     {"pid", pid},
                     {"tid", r},
                     {"args", {{"sort_index", r}}}});
    }
  }
  for (const TraceEvent& e : events) {
    const std::string name = e.chunk >= 0 ? e.what + " #" + std::to_string(e.chunk) : e.what;
    out.push_back({{"ph", "X"},
                   {"name", name},
                   {"cat", e.what},
                   {"pid", e.pid},
                   {"tid", int(e.resource)},
                   {"ts", e.start_s * 1e6},
                   {"dur", (e.end_s - e.start_s) * 1e6},
                   {"args", {{"chunk", e.chunk}, {"resource", to_string(e.resource)}}}});
  }
  return {{"traceEvents", out}, {"displayTimeUnit", "ms"}};
}

json predicted_trace(const Plan& plan) {
  std::vector<TraceEvent> events;
  for (const StageSpan& s : plan.predicted.schedule)
    events.push_back({0, s.resource, s.what, s.chunk, s.start_s, s.end_s});
  json j = trace_json(events, {"predicted optimizer step"});
  const Prediction& p = plan.predicted;
  if (!p.training_step_s) return j;
  // The training step's terms add up to it: drawn back to back, in the order they are summed.
  json& ev = j["traceEvents"];
  ev.push_back({{"ph", "M"},
                {"name", "process_name"},
                {"pid", 1},
                {"args", {{"name", "predicted training step"}}}});
  ev.push_back({{"ph", "M"},
                {"name", "thread_name"},
                {"pid", 1},
                {"tid", kPhaseTid},
                {"args", {{"name", "phases"}}}});
  double t = 0;
  for (const Term& term : p.training_terms_s) {
    if (term.value <= 0) continue;
    ev.push_back({{"ph", "X"},
                  {"name", term.name},
                  {"cat", "training_phase"},
                  {"pid", 1},
                  {"tid", kPhaseTid},
                  {"ts", t * 1e6},
                  {"dur", term.value * 1e6},
                  {"args", {{"formula", term.formula}}}});
    t += term.value;
  }
  return j;
}

std::vector<TraceEvent> trace_events(const json& trace, const std::string& path) {
  auto bad = [&](const std::string& what) { throw InputError({path, 0, 0}, "traceEvents", what); };
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array())
    bad("missing: not a trace-event JSON object");
  std::vector<TraceEvent> out;
  for (const json& e : trace["traceEvents"]) {
    if (!e.is_object() || e.value("ph", "") != "X" || e.value("cat", "") == "training_phase")
      continue;
    try {
      TraceEvent t;
      t.pid = e.at("pid").get<int>();
      t.resource = resource_named(e.at("args").at("resource").get<std::string>(), path);
      t.what = e.at("cat").get<std::string>();
      t.chunk = e.at("args").at("chunk").get<int>();
      t.start_s = e.at("ts").get<double>() * 1e-6;
      t.end_s = t.start_s + e.at("dur").get<double>() * 1e-6;
      out.push_back(std::move(t));
    } catch (const json::exception& x) {
      bad(std::string("an event lacks a field: ") + x.what());
    }
  }
  return out;
}

}  // namespace muonplan
