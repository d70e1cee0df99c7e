// Backend's kernel calls, each through launch(), and the kernel table's default implementations,
// which go through host memory so any table has them (a device table overrides them).
#include "muonplan/exec/backend.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace muonplan::exec {

void* Backend::alloc_host(size_t bytes) {
  return alloc_pageable(bytes);
}

void Backend::free_host(void* ptr) {
  free_pageable(ptr);
}

int Backend::checked_lane(int lane) {
  if (lane < 0 || lane >= kMaxLanes) {
    throw std::invalid_argument("set_lane: lane " + std::to_string(lane) + " is not in 0.." +
                                std::to_string(kMaxLanes - 1));
  }
  return lane;
}

bool Backend::within_one(const std::map<uintptr_t, size_t>& allocations, const void* p,
                         size_t bytes) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  auto it = allocations.upper_bound(at);
  if (it == allocations.begin()) return false;
  --it;
  return at + bytes <= it->first + it->second;
}

void* Backend::alloc_pageable(size_t bytes) {
  if (bytes == 0) return nullptr;
  // 64-byte lines: the host kernels use aligned vector loads where they can.
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  track_host_alloc(p, bytes);
  return p;
}

void Backend::free_pageable(void* ptr) {
  if (!ptr) return;
  track_host_free(ptr);
  std::free(ptr);
}

void Kernels::scale_bf16_by(int64_t elems, float s, const bf16* x, bf16* y) {
  if (elems <= 0) return;
  void* factor = memory_.alloc(sizeof(float));
  memory_.copy_to_device(factor, &s, sizeof s);
  scale_bf16(1, elems, x, static_cast<const float*>(factor), y);
  memory_.free(factor);
}

void Kernels::ns_scale(int64_t batch, const float* sum_sq, double norm_scale, double eps,
                       float* scale) {
  std::vector<float> host(batch);
  memory_.copy_to_host(host.data(), sum_sq, batch * sizeof(float));
  for (float& v : host) {
    v = static_cast<float>(1.0 / (norm_scale * std::sqrt(static_cast<double>(v)) + eps));
  }
  memory_.copy_to_device(scale, host.data(), batch * sizeof(float));
}

namespace {

void check_matrix(const char* call, const char* what, const MatrixBatch& x, int64_t rows,
                  int64_t cols) {
  if (x.rows != rows || x.cols != cols || x.ld < std::max<int64_t>(cols, 1) || x.stride < 0) {
    throw std::invalid_argument(std::string(call) + ": " + what + " is " + std::to_string(x.rows) +
                                " x " + std::to_string(x.cols) + " (ld " + std::to_string(x.ld) +
                                "), the call needs " + std::to_string(rows) + " x " +
                                std::to_string(cols) + " with ld >= cols");
  }
}

// Byte range [first, last) a matrix batch touches.
std::pair<uintptr_t, uintptr_t> extent(const MatrixBatch& x, int64_t batch) {
  const auto first = reinterpret_cast<uintptr_t>(x.ptr);
  const int64_t elems = (batch - 1) * x.stride + (x.rows - 1) * x.ld + x.cols;
  return {first, first + static_cast<uintptr_t>(elems) * sizeof(bf16)};
}

bool overlap(const MatrixBatch& x, const MatrixBatch& y, int64_t batch) {
  const auto a = extent(x, batch), b = extent(y, batch);
  return a.first < b.second && b.first < a.second;
}

}  // namespace

void Backend::gemm_bf16(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                        float alpha, const MatrixBatch& a, const MatrixBatch& b, float beta,
                        const MatrixBatch& c) {
  constexpr const char* call = "gemm_bf16";
  if (batch < 0 || m < 0 || n < 0 || k < 0) throw std::invalid_argument("gemm_bf16: negative size");
  if (batch == 0 || m == 0 || n == 0) return;
  check_matrix(call, "C", c, m, n);
  if (k > 0) {  // with k == 0, A and B are not read
    // Stored shapes: op(A) is m x k, so A is k x m when transposed.
    check_matrix(call, "A", a, trans_a ? k : m, trans_a ? m : k);
    check_matrix(call, "B", b, trans_b ? n : k, trans_b ? k : n);
    if (overlap(c, a, batch) || overlap(c, b, batch)) {
      throw std::invalid_argument("gemm_bf16: C overlaps A or B");
    }
  }
  launch(
      [=](Kernels& t) { t.run_gemm_bf16(batch, trans_a, trans_b, m, n, k, alpha, a, b, beta, c); });
}

void Backend::syrk_bf16(int64_t batch, int64_t n, int64_t k, float alpha, const MatrixBatch& a,
                        float beta, const MatrixBatch& c) {
  constexpr const char* call = "syrk_bf16";
  if (batch < 0 || n < 0 || k < 0) throw std::invalid_argument("syrk_bf16: negative size");
  if (batch == 0 || n == 0) return;
  check_matrix(call, "C", c, n, n);
  if (k > 0) {
    check_matrix(call, "A", a, n, k);
    if (overlap(c, a, batch)) throw std::invalid_argument("syrk_bf16: C overlaps A");
  }
  launch([=](Kernels& t) { t.run_syrk_bf16(batch, n, k, alpha, a, beta, c); });
}

void Kernels::run_syrk_bf16(int64_t batch, int64_t n, int64_t k, float alpha, const MatrixBatch& a,
                            float beta, const MatrixBatch& c) {
  run_gemm_bf16(batch, false, true, n, n, k, alpha, a, a, beta, c);
}

void Kernels::transpose_bf16(int64_t batch, int64_t rows, int64_t cols, const bf16* x, bf16* y) {
  const int64_t elems = rows * cols;
  std::vector<bf16> in(batch * elems), out(batch * elems);
  memory_.copy_to_host(in.data(), x, in.size() * sizeof(bf16));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j)
        out[b * elems + j * rows + i] = in[b * elems + i * cols + j];
    }
  }
  memory_.copy_to_device(y, out.data(), out.size() * sizeof(bf16));
}

// The elementwise kernels: each forwards its arguments to the table through launch().
void Backend::sum_squares_bf16(int64_t batch, int64_t elems, const bf16* x, float* out) {
  launch([=](Kernels& t) { t.sum_squares_bf16(batch, elems, x, out); });
}
void Backend::sum_squares_f32(int64_t n, const float* x, float* out) {
  launch([=](Kernels& t) { t.sum_squares_f32(n, x, out); });
}
void Backend::scale_bf16(int64_t batch, int64_t elems, const bf16* x, const float* scale, bf16* y) {
  launch([=](Kernels& t) { t.scale_bf16(batch, elems, x, scale, y); });
}
void Backend::scale_bf16_by(int64_t elems, float s, const bf16* x, bf16* y) {
  launch([=](Kernels& t) { t.scale_bf16_by(elems, s, x, y); });
}
void Backend::ns_scale(int64_t batch, const float* sum_sq, double norm_scale, double eps,
                       float* scale) {
  launch([=](Kernels& t) { t.ns_scale(batch, sum_sq, norm_scale, eps, scale); });
}
void Backend::transpose_bf16(int64_t batch, int64_t rows, int64_t cols, const bf16* x, bf16* y) {
  launch([=](Kernels& t) { t.transpose_bf16(batch, rows, cols, x, y); });
}
void Backend::cast_to_bf16(int64_t n, const float* x, bf16* y) {
  launch([=](Kernels& t) { t.cast_to_bf16(n, x, y); });
}
void Backend::cast_to_f32(int64_t n, const bf16* x, float* y) {
  launch([=](Kernels& t) { t.cast_to_f32(n, x, y); });
}
void Backend::momentum_f32(int64_t n, float mu, bool nesterov, const float* g, float* m, bf16* u) {
  launch([=](Kernels& t) { t.momentum_f32(n, mu, nesterov, g, m, u); });
}
void Backend::momentum_bf16(int64_t n, float mu, bool nesterov, const float* g, bf16* m, bf16* u) {
  launch([=](Kernels& t) { t.momentum_bf16(n, mu, nesterov, g, m, u); });
}
void Backend::apply_update(int64_t n, float decay, float s, const bf16* o, float* w) {
  launch([=](Kernels& t) { t.apply_update(n, decay, s, o, w); });
}
void Backend::adamw(int64_t n, float lr, float beta1, float beta2, float eps, float wd,
                    int64_t step, const float* g, float* w, float* m, float* v) {
  launch([=](Kernels& t) { t.adamw(n, lr, beta1, beta2, eps, wd, step, g, w, m, v); });
}

}  // namespace muonplan::exec
