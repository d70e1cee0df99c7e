// Chrome trace-event JSON of an optimizer step (docs/report.md, "Traces"): the planner's
// predicted schedule and the executor's measured one in the same form, so the two open side
// by side in Perfetto or chrome://tracing. One complete event ("ph": "X") per stage, named
// "<stage> #<chunk>" with the stage's name as its category; one track (tid) per resource,
// named by thread_name metadata; one process (pid) per rank (the prediction: pid 0).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "muonplan/planfile/prediction.h"

namespace muonplan {

struct Plan;

// One stage as a trace draws it. chunk -1: work of no single chunk (whole-state staging).
struct TraceEvent {
  int pid = 0;
  Resource resource = Resource::gpu;
  std::string what;  // the stage's name: the event's category
  int chunk = -1;
  double start_s = 0, end_s = 0;
};

// {"traceEvents": [...]}: metadata naming each process (process_names[pid], when given) and
// each resource track, then the events (ts and dur in microseconds).
nlohmann::json trace_json(const std::vector<TraceEvent>& events,
                          const std::vector<std::string>& process_names);

// The plan's predicted optimizer step (pid 0) and, with a workload, the training step's
// phases one after another on a track of their own (pid 1).
nlohmann::json predicted_trace(const Plan& plan);

// The events of a trace_json document (InputError naming `path` and the field when it is not
// one): what the executor's gather and the report read back.
std::vector<TraceEvent> trace_events(const nlohmann::json& trace, const std::string& path);

}  // namespace muonplan
