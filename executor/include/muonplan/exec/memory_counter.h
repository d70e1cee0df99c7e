// Memory accounting, beside the ops interface rather than inside it: every byte a backend
// allocates is counted here, per allocation, with the running peak the executor reports as
// measured memory (docs/executor.md). Backend holds one for device memory and one for host
// memory (a wrapper shares those of the backend it wraps). Thread-safe: alloc and free may come
// from several threads.
#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

namespace muonplan::exec {

struct MemoryStats {
  size_t current_bytes = 0;  // allocated and not yet freed
  size_t peak_bytes = 0;     // max of current_bytes since the last reset_peak()
};

class MemoryCounter {
 public:
  struct Allocation {
    size_t bytes = 0;
    int lane = 0;  // the lane (stream) that allocated it, for backends that free per lane
  };

  void add(void* ptr, size_t bytes, int lane = 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    live_[ptr] = Allocation{bytes, lane};
    stats_.current_bytes += bytes;
    if (stats_.current_bytes > stats_.peak_bytes) stats_.peak_bytes = stats_.current_bytes;
  }
  // The allocation `ptr` was added with, now no longer counted; nullopt when it was not added.
  std::optional<Allocation> remove(void* ptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = live_.find(ptr);
    if (it == live_.end()) return std::nullopt;
    const Allocation a = it->second;
    stats_.current_bytes -= a.bytes;
    live_.erase(it);
    return a;
  }
  MemoryStats stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }
  void reset_peak() {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.peak_bytes = stats_.current_bytes;
  }
  // The pointers still allocated (a backend's destructor frees them).
  std::vector<void*> live() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<void*> out;
    for (const auto& entry : live_) out.push_back(entry.first);
    return out;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<void*, Allocation> live_;
  MemoryStats stats_;
};

}  // namespace muonplan::exec
