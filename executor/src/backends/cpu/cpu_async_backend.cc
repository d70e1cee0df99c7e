// The CPU backend with asynchronous lanes (cpu_async_backend.h): the CPU reference's kernels,
// queued per lane and run by one thread per lane with CUDA's stream ordering.
#include "muonplan/exec/cpu_async_backend.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

namespace muonplan::exec {
namespace {

using Clock = std::chrono::steady_clock;

// One queued operation: work to run, or (wait_lane >= 0) an event wait: the lane stops until
// lane wait_lane has completed its first wait_count operations.
struct Op {
  std::function<void()> run;
  int wait_lane = -1;
  uint64_t wait_count = 0;
  Clock::time_point queued;
};

// Counts are of operations since construction: enqueued, completed, and the most that someone
// (the host or another lane) waits for, which cuts the random delay short.
struct Lane {
  std::deque<Op> queue;
  uint64_t enqueued = 0, done = 0, demand = 0;
  Clock::time_point last_done;
  std::mt19937_64 rng;
  std::thread thread;
};

class CpuAsyncBackend final : public Backend {
 public:
  explicit CpuAsyncBackend(const CpuAsyncOptions& o) : opt_(o), inner_(make_cpu_backend()) {
    for (int k = 0; k < kMaxLanes; ++k) {
      lanes_[k].rng.seed(o.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(k));
      lanes_[k].last_done = Clock::now();
    }
    for (int k = 0; k < kMaxLanes; ++k) lanes_[k].thread = std::thread([this, k] { drain(k); });
  }

  ~CpuAsyncBackend() override {
    try {
      synchronize(Sync::all_lanes);
    } catch (...) {
      // An operation's error: a destructor cannot report it, and the queues are empty now.
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    for (Lane& l : lanes_) l.thread.join();
    for (void* p : counted(MemoryKind::device).live()) inner_->free(p);
    for (auto& [at, bytes] : pinned_) free_pageable(reinterpret_cast<void*>(at));
  }

  // Calls enqueue on a lane: not host timed.
  BackendInfo describe() const override {
    return {"cpu-async", false, inner_->describe().gemm_path};
  }

  // --- memory
  void* alloc(size_t bytes, MemoryKind kind) override {
    if (kind == MemoryKind::pinned_host) {
      void* p = alloc_pageable(bytes);
      if (p) pinned_[reinterpret_cast<uintptr_t>(p)] = bytes;
      return p;
    }
    void* p = inner_->alloc(bytes);
    std::memset(p, 0xFF, bytes);  // what a pool block holds before its zero-fill has run
    counted(kind).add(p, bytes, lane());
    enqueue([p, bytes] { std::memset(p, 0, bytes); });
    return p;
  }

  void free(void* ptr, MemoryKind kind) override {
    if (ptr == nullptr) return;
    if (kind == MemoryKind::pinned_host) {
      synchronize(Sync::all_lanes);  // a queued copy may still read or write it
      pinned_.erase(reinterpret_cast<uintptr_t>(ptr));
      return free_pageable(ptr);
    }
    const std::optional<MemoryCounter::Allocation> a = counted(kind).remove(ptr);
    if (!a)
      throw std::invalid_argument("cpu-async backend: free() of a pointer alloc() did not return");
    if (a->lane != lane()) lane_waits(a->lane, lane());
    const size_t bytes = a->bytes;
    enqueue_on(a->lane, [this, ptr, bytes] {
      std::memset(ptr, 0xFF, bytes);  // a use after the free reads NaN
      inner_->free(ptr);
    });
  }

  // Queued; a copy from or into pageable host memory returns once the lane has run it.
  void copy(void* dst, const void* src, size_t bytes, Copy direction) override {
    if (bytes == 0) return;
    enqueue([this, dst, src, bytes, direction] { inner_->copy(dst, src, bytes, direction); });
    const void* host = direction == Copy::host_to_device   ? src
                       : direction == Copy::device_to_host ? dst
                                                           : nullptr;
    if (host != nullptr && !pinned(host, bytes)) pageable_copy(bytes);
  }

  void synchronize(Sync scope) override {
    if (scope == Sync::current_lane) return wait_for_lane();
    if (scope == Sync::join_lanes) return join();
    std::unique_lock<std::mutex> lock(mutex_);
    std::array<uint64_t, kMaxLanes> target{};
    for (int k = 0; k < kMaxLanes; ++k) {
      target[k] = lanes_[k].enqueued;
      lanes_[k].demand = std::max(lanes_[k].demand, target[k]);
    }
    cv_.notify_all();
    cv_.wait(lock, [&] {
      for (int k = 0; k < kMaxLanes; ++k) {
        if (lanes_[k].done < target[k]) return false;
      }
      return true;
    });
    rethrow(lock);
  }

  // --- kernels: the CPU backend's table, each call queued on the current lane
  void launch(const KernelCall& call) override {
    enqueue([this, call] { inner_->launch(call); });
  }

 private:
  // The host waits for the current lane's queued work.
  void wait_for_lane() {
    std::unique_lock<std::mutex> lock(mutex_);
    Lane& l = lanes_[lane()];
    const uint64_t target = l.enqueued;
    l.demand = std::max(l.demand, target);
    cv_.notify_all();
    cv_.wait(lock, [&] { return l.done >= target; });
    rethrow(lock);
  }

  // An event wait on every lane for every other lane's work queued so far.
  void join() {
    if (opt_.drop_joins) return;
    std::array<uint64_t, kMaxLanes> upto{};
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (int k = 0; k < kMaxLanes; ++k) upto[k] = lanes_[k].enqueued;
    }
    for (int j = 0; j < kMaxLanes; ++j) {
      for (int k = 0; k < kMaxLanes; ++k) {
        if (j != k && upto[k] > 0) enqueue_wait(j, k, upto[k]);
      }
    }
  }

  void enqueue(std::function<void()> run) { enqueue_on(lane(), std::move(run)); }

  void enqueue_on(int lane, std::function<void()> run) {
    Op op;
    op.run = std::move(run);
    push(lane, std::move(op));
  }

  // Lane `waiter` continues only after lane `signaller`'s first `count` operations.
  void enqueue_wait(int waiter, int signaller, uint64_t count) {
    Op op;
    op.wait_lane = signaller;
    op.wait_count = count;
    push(waiter, std::move(op));
  }

  // An event recorded on `signaller` now, waited for on `waiter`.
  void lane_waits(int waiter, int signaller) {
    uint64_t count = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      count = lanes_[signaller].enqueued;
    }
    if (count > 0) enqueue_wait(waiter, signaller, count);
  }

  void push(int lane, Op op) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      op.queued = Clock::now();
      lanes_[lane].queue.push_back(std::move(op));
      ++lanes_[lane].enqueued;
    }
    cv_.notify_all();
  }

  // Lane k's thread: runs its operations in order, each after its delay unless waited for.
  void drain(int k) {
    Lane& l = lanes_[k];
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !l.queue.empty(); });
      if (l.queue.empty()) return;
      const uint64_t index = l.done + 1;  // the front operation's count
      if (opt_.max_delay_us > 0) {
        std::uniform_int_distribution<int64_t> delay(0, opt_.max_delay_us);
        const Clock::time_point due =
            std::max(l.queue.front().queued, l.last_done) + std::chrono::microseconds(delay(l.rng));
        cv_.wait_until(lock, due, [&] { return stop_ || l.demand >= index; });
      }
      Op op = std::move(l.queue.front());
      l.queue.pop_front();
      if (op.wait_lane >= 0) {
        Lane& s = lanes_[op.wait_lane];
        s.demand = std::max(s.demand, op.wait_count);
        cv_.notify_all();
        cv_.wait(lock, [&] { return s.done >= op.wait_count; });
      } else {
        lock.unlock();
        run(op);
        lock.lock();
      }
      ++l.done;
      l.last_done = Clock::now();
      cv_.notify_all();
    }
  }

  // One operation at a time over all lanes: the CPU backend takes one caller at a time.
  // After a failure the rest are skipped; the next synchronize throws the first error.
  void run(Op& op) {
    std::lock_guard<std::mutex> turn(run_mutex_);
    if (failed_) return;
    try {
      op.run();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::current_exception();
      failed_ = true;
    }
  }

  void rethrow(std::unique_lock<std::mutex>& lock) {
    if (!error_) return;
    std::exception_ptr e = error_;
    lock.unlock();
    std::rethrow_exception(e);
  }

  // A copy from or into pageable memory returns once the lane has run it.
  void pageable_copy(size_t bytes) {
    if (opt_.pageable_copy_bytes) *opt_.pageable_copy_bytes += int64_t(bytes);
    wait_for_lane();
  }

  // Whether [p, p + bytes) lies in one alloc_host allocation (touched by the host thread only).
  bool pinned(const void* p, size_t bytes) const { return within_one(pinned_, p, bytes); }

  const CpuAsyncOptions opt_;
  std::unique_ptr<Backend> inner_;
  std::map<uintptr_t, size_t> pinned_;
  std::mutex mutex_;  // the lanes' queues and counts, error_
  std::condition_variable cv_;
  std::mutex run_mutex_;
  bool stop_ = false, failed_ = false;
  std::exception_ptr error_;
  std::array<Lane, kMaxLanes> lanes_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_async_backend(const CpuAsyncOptions& options) {
  return std::make_unique<CpuAsyncBackend>(options);
}

}  // namespace muonplan::exec
