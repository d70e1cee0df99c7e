#include "muonplan/exec/timed_backend.h"

namespace muonplan::exec {

TimedBackend::Scope::Scope(double* sink) : sink_(sink) {
  if (sink_) t0_ = std::chrono::steady_clock::now();
}

TimedBackend::Scope::~Scope() {
  if (sink_) {
    *sink_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
}

void TimedBackend::copy(void* dst, const void* src, size_t bytes, Copy direction) {
  switch (direction) {
    case Copy::host_to_device: {
      Scope t(last(to_.h2d_s));
      inner_.copy(dst, src, bytes, direction);
      if (to_.h2d_bytes) *to_.h2d_bytes += bytes;
      return;
    }
    case Copy::device_to_host: {
      Scope t(last(to_.d2h_s));
      inner_.copy(dst, src, bytes, direction);
      if (to_.d2h_bytes) *to_.d2h_bytes += bytes;
      return;
    }
    case Copy::device_to_device: {
      Scope t(last(to_.kernel_s));
      inner_.copy(dst, src, bytes, direction);
      return;
    }
  }
}

void TimedBackend::synchronize(Sync scope) {
  Scope t(scope == Sync::current_lane ? last_[lane()] : nullptr);
  inner_.synchronize(scope);
}

void TimedBackend::launch(const KernelCall& call) {
  Scope t(last(to_.kernel_s));
  inner_.launch(call);
}

}  // namespace muonplan::exec
