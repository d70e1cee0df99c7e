// Helpers for the executor tests: seeded random data and backend buffers.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "muonplan/exec/backend.h"

namespace muonplan::exec::test {

// float_bits and bits_float come from bf16.h.

// n bf16 values of N(0, sigma^2), seeded.
inline std::vector<bf16> random_bf16(int64_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<bf16> v(n);
  for (bf16& x : v) x = to_bf16(normal(rng));
  return v;
}

inline std::vector<float> random_f32(int64_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

inline bool same_bits(const std::vector<bf16>& a, const std::vector<bf16>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(bf16)) == 0;
}

// Backend memory of n elements of T, freed on scope exit. The CPU backend's memory is host
// memory, so tests read and write it through data().
template <typename T>
class Buffer {
 public:
  Buffer(Backend& backend, int64_t n)
      : backend_(backend), n_(n), ptr_(static_cast<T*>(backend.alloc(n * sizeof(T)))) {}
  Buffer(Backend& backend, const std::vector<T>& host) : Buffer(backend, host.size()) {
    backend_.copy_to_device(ptr_, host.data(), host.size() * sizeof(T));
  }
  ~Buffer() { backend_.free(ptr_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  T* data() const { return ptr_; }
  std::vector<T> host() const {
    std::vector<T> v(n_);
    backend_.copy_to_host(v.data(), ptr_, n_ * sizeof(T));
    return v;
  }

 private:
  Backend& backend_;
  int64_t n_;
  T* ptr_;
};

}  // namespace muonplan::exec::test
