// The step's trace (issue 37 item 4: tracing apart from the algorithm): its stages, named and
// placed on resources as the planner's predicted schedule names them (trace.h, stage_names.h),
// timed from the start of each run. A stage is the schedule's unit (the momentum of a whole
// batch, the copy of a slice's state), so the step marks it with a Span around the calls it
// spans. Without a sink nothing is recorded and no clock is read.
#pragma once

#include <chrono>
#include <vector>

#include "muonplan/exec/backend.h"
#include "muonplan/planfile/plan_file.h"
#include "muonplan/planfile/trace.h"

namespace muonplan::exec {

class StepTrace {
 public:
  using Clock = std::chrono::steady_clock;
  StepTrace(const Plan& plan, const Backend& backend) : plan_(plan), backend_(backend) {}

  // nullptr (the default): record nothing.
  void set_sink(std::vector<TraceEvent>* sink) { sink_ = sink; }
  bool on() const { return sink_ != nullptr; }
  // A run begins: the sink is emptied and the clock starts; no chunk runs yet.
  void start();
  // When a stage that is not one scope starts (an exchange, recorded when waited for).
  Clock::time_point now() const { return on() ? Clock::now() : Clock::time_point{}; }
  // Appends [t0, now) as stage `what` of chunk c (nullptr: of no single chunk) on resource r;
  // nothing where the host's time around device work is launch time, not run time
  // (Backend::host_timed).
  void record(const char* what, Resource r, const Chunk* c, Clock::time_point t0);

  // The chunk whose stages run now: what the stages of the step's shared passes are named by.
  const Chunk* chunk = nullptr;

  // Records its scope as stage `what` (nullptr: none) when the trace is on.
  class Span {
   public:
    Span(StepTrace& trace, const char* what, Resource r, const Chunk* c)
        : trace_(trace.on() && what ? &trace : nullptr), what_(what), r_(r), c_(c) {
      if (trace_) t0_ = Clock::now();
    }
    ~Span() {
      if (trace_) trace_->record(what_, r_, c_, t0_);
    }
    Span(const Span&) = delete;
    Span& operator=(const Span&) = delete;

   private:
    StepTrace* trace_;
    const char* what_;
    Resource r_;
    const Chunk* c_;
    Clock::time_point t0_;
  };

 private:
  const Plan& plan_;
  const Backend& backend_;
  std::vector<TraceEvent>* sink_ = nullptr;
  Clock::time_point start_;
};

}  // namespace muonplan::exec
