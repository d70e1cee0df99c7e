// Helpers of the GPU tests: the same operation on the CPU reference and the CUDA backend.
#pragma once

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "../exec/exec_test_util.h"
#include "muonplan/exec/cuda_backend.h"

namespace muonplan::exec::test {

// The backends every GPU test compares: the CPU oracle and the CUDA backend on device 0.
struct Pair {
  std::unique_ptr<Backend> cpu = make_cpu_backend();
  std::unique_ptr<CudaBackend> cuda = make_cuda_backend(0);
};

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// Index of the first element whose bits differ, or -1.
template <typename T>
int64_t first_difference(const std::vector<T>& a, const std::vector<T>& b) {
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return static_cast<int64_t>(i);
  }
  return a.size() == b.size() ? -1 : static_cast<int64_t>(std::min(a.size(), b.size()));
}

inline double value(float v) {
  return v;
}
inline double value(bf16 v) {
  return to_float(v);
}

// ||got - want|| / ||want|| (Frobenius, in double).
template <typename T>
double relative_difference(const std::vector<T>& got, const std::vector<T>& want) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = value(got[i]) - value(want[i]);
    diff += d * d;
    norm += value(want[i]) * value(want[i]);
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

}  // namespace muonplan::exec::test
