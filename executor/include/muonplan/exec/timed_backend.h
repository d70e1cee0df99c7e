// The step's timing as a wrapper around its backend (issue 37 item 4), as cpu-async wraps the
// CPU backend: the step calls this backend, which forwards every call to the one it wraps and
// adds the call's host wall time, and a copy's bytes, to the step's counters (StepCounters):
//   kernels (launch) and device_to_device copies   -> kernel_s
//   host_to_device copies                          -> h2d_s, h2d_bytes
//   device_to_host copies                          -> d2h_s, d2h_bytes
//   synchronize(current_lane)                      -> the counter of the lane's last call: the
//                                                     wait is for that call to finish
// Memory management (alloc, free) and the other synchronize scopes are not counted: they are not
// one kind of work. A null counter is not counted.
//
// The wrapper owns nothing: the lane and the byte counts (memory(), host_memory()) are the
// inner backend's, shared (Backend's Wraps constructor).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>

#include "muonplan/exec/backend.h"

namespace muonplan::exec {

// Where a TimedBackend adds its calls' host seconds and bytes.
struct CallCounters {
  double* kernel_s = nullptr;
  double* h2d_s = nullptr;
  double* d2h_s = nullptr;
  uint64_t* h2d_bytes = nullptr;
  uint64_t* d2h_bytes = nullptr;
};

class TimedBackend : public Backend {
 public:
  TimedBackend(Backend& inner, const CallCounters& counters)
      : Backend(Wraps{inner}), inner_(inner), to_(counters) {}
  // The named forms (alloc(bytes), synchronize(), ...) beside the overrides below.
  using Backend::alloc;
  using Backend::copy;
  using Backend::free;
  using Backend::synchronize;

  BackendInfo describe() const override { return inner_.describe(); }
  void* alloc(size_t bytes, MemoryKind kind) override { return inner_.alloc(bytes, kind); }
  void free(void* ptr, MemoryKind kind) override { inner_.free(ptr, kind); }
  void copy(void* dst, const void* src, size_t bytes, Copy direction) override;
  void synchronize(Sync scope) override;
  std::optional<RuntimeMemory> runtime_memory() const override { return inner_.runtime_memory(); }
  void launch(const KernelCall& call) override;

 private:
  // Adds the wall time of its scope to *sink (when not null).
  class Scope {
   public:
    explicit Scope(double* sink);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    double* sink_;
    std::chrono::steady_clock::time_point t0_;
  };
  // Marks the current lane's last call as counted in `sink`.
  double* last(double* sink) { return last_[lane()] = sink; }

  Backend& inner_;
  const CallCounters to_;
  std::array<double*, kMaxLanes> last_{};  // per lane: the counter of its last call
};

}  // namespace muonplan::exec
