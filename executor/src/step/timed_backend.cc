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

void TimedBackend::copy_to_device(void* dst, const void* host_src, size_t bytes) {
  Scope t(last(to_.h2d_s));
  inner_.copy_to_device(dst, host_src, bytes);
  if (to_.h2d_bytes) *to_.h2d_bytes += bytes;
}

void TimedBackend::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  Scope t(last(to_.d2h_s));
  inner_.copy_to_host(host_dst, src, bytes);
  if (to_.d2h_bytes) *to_.d2h_bytes += bytes;
}

void TimedBackend::copy(void* dst, const void* src, size_t bytes) {
  Scope t(last(to_.kernel_s));
  inner_.copy(dst, src, bytes);
}

void TimedBackend::set_lane(int lane) {
  inner_.set_lane(lane);
  lane_ = checked_lane(lane);
}

void TimedBackend::synchronize_lane() {
  Scope t(last_[lane_]);
  inner_.synchronize_lane();
}

void TimedBackend::launch(const KernelCall& call) {
  Scope t(last(to_.kernel_s));
  inner_.launch(call);
}

}  // namespace muonplan::exec
