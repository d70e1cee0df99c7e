// The step's timing as a wrapper around its backend (issue 37 item 4), as cpu-async wraps the
// CPU backend: the step calls this backend, which forwards every call to the one it wraps and
// adds the call's host wall time, and a copy's bytes, to the step's counters (StepCounters):
//   kernels (launch) and copies within the device  -> kernel_s
//   copy_to_device                                  -> h2d_s, h2d_bytes
//   copy_to_host                                    -> d2h_s, d2h_bytes
//   synchronize_lane                                -> the counter of the lane's last call: the
//                                                      wait is for that call to finish
// Memory management (alloc, free, alloc_host) and synchronize() are not counted: they are not
// one kind of work. A null counter is not counted.
//
// The wrapper owns nothing: memory(), host memory and the lanes are the inner backend's (call
// host_memory() and alloc_pageable() on that one: they are not virtual).
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
  TimedBackend(Backend& inner, const CallCounters& counters) : inner_(inner), to_(counters) {}

  std::string name() const override { return inner_.name(); }
  bool host_timed() const override { return inner_.host_timed(); }
  GemmPath gemm_path() const override { return inner_.gemm_path(); }
  void* alloc(size_t bytes) override { return inner_.alloc(bytes); }
  void free(void* ptr) override { inner_.free(ptr); }
  void copy_to_device(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  MemoryStats memory() const override { return inner_.memory(); }
  std::optional<RuntimeMemory> runtime_memory() const override { return inner_.runtime_memory(); }
  void reset_peak() override { inner_.reset_peak(); }
  void synchronize() override { inner_.synchronize(); }
  void* alloc_host(size_t bytes) override { return inner_.alloc_host(bytes); }
  void free_host(void* ptr) override { inner_.free_host(ptr); }
  void set_lane(int lane) override;
  void join_lanes() override { inner_.join_lanes(); }
  void synchronize_lane() override;
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
  double* last(double* sink) { return last_[lane_] = sink; }

  Backend& inner_;
  const CallCounters to_;
  int lane_ = 0;
  std::array<double*, kMaxLanes> last_{};  // per lane: the counter of its last call
};

}  // namespace muonplan::exec
