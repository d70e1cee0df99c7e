#include "muonplan/exec/step_trace.h"

namespace muonplan::exec {

void StepTrace::start() {
  chunk = nullptr;
  if (!on()) return;
  sink_->clear();
  start_ = Clock::now();
}

void StepTrace::record(const char* what, Resource r, const Chunk* c, Clock::time_point t0) {
  // Host time around enqueued device work is launch time, not run time: left out.
  const bool device = r == Resource::gpu || r == Resource::pcie_h2d || r == Resource::pcie_d2h;
  if (device && !backend_.host_timed()) return;
  const auto secs = [&](Clock::time_point t) {
    return std::chrono::duration<double>(t - start_).count();
  };
  const int index = c ? int(c - plan_.chunks.chunks.data()) : -1;
  sink_->push_back({0, r, what, index, secs(t0), secs(Clock::now())});
}

}  // namespace muonplan::exec
