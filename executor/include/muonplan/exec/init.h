// Deterministic initial parameters and per-step gradients for executor runs. Element i of a
// global tensor gets the same value whichever rank computes it and however the tensor is
// sharded, so runs on different world sizes start from, and are fed, identical data.
//
// Values come from a counter-based generator (splitmix64 of a hash of the name, the step and
// the global element index), uniform and centered:
//   params: uniform with std 0.02; tensors whose name contains "norm" (norm gains) get
//           1 + that noise, close to the usual 1.0 init but different per element, so a wrong
//           offset in a test shows up instead of reading another 1.0.
//   grads:  uniform with std 1e-3, a fresh draw per (name, step).
// All values are finite fp32.
#pragma once

#include <cstdint>
#include <string>

namespace muonplan::exec {

// out[k] = initial value of element global_offset + k of tensor `name` (row-major, whole
// tensor), k in [0, count).
void fill_param(const std::string& name, int64_t global_offset, int64_t count, float* out);

// out[k] = gradient of element global_offset + k of tensor `name` at optimizer step `step`.
void fill_grad(const std::string& name, int64_t step, int64_t global_offset, int64_t count,
               float* out);

}  // namespace muonplan::exec
