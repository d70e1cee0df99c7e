// What a step timeline (planner/src/cost/step_timeline.h) holds of one tensor kind, for tests that
// hand-count it: the memory terms of every runtime are its tensors at its peak.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "cost/step_timeline.h"
#include "muonplan/planner/plan.h"

namespace muonplan::test {

// Bytes of `kind` live after each event, through the first event in a phase that contains
// `stop` (not counted; "" runs to the end): the last such figure, and the most.
struct KindBytes {
  double last = 0, most = 0;
};
inline KindBytes kind_bytes(const StepTimeline& tl, const std::string& kind,
                            const std::string& stop = "") {
  std::vector<char> live(tl.tensors.size(), 0);
  KindBytes b;
  for (const TimelineEvent& e : tl.events) {
    if (!stop.empty() && tl.phases[size_t(e.where)].find(stop) != std::string::npos) break;
    const TimelineTensor& t = tl.tensors[size_t(e.tensor)];
    if (t.kind == kind && e.alloc != bool(live[size_t(e.tensor)]))
      b.last += e.alloc ? double(t.bytes) : -double(t.bytes);
    live[size_t(e.tensor)] = e.alloc;
    b.most = std::max(b.most, b.last);
  }
  return b;
}

// The timeline of a plan, with its optimizer step's buffers.
inline StepTimeline timeline_of(const ModelSpec& spec, const Plan& plan) {
  TimelineInputs in;
  in.step_transient = plan.predicted.gpu_transient_bytes;
  return build_step_timeline(spec, plan.inventory, plan.options, plan.chunks, in);
}

}  // namespace muonplan::test
