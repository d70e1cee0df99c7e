// Backend's kernel calls, each through launch(), and the kernel table's defaults (with_defaults),
// which go through the backend's own entries and host memory so any table has them (a device
// table sets its own).
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

Backend::Backend() = default;

Backend::Backend(const KernelTable& kernels) : kernels_(with_defaults(kernels)) {}

void Backend::launch(const KernelCall& call) {
  if (kernels_.gemm_bf16 == nullptr) {
    throw std::logic_error(name() + " backend: no kernel table, and launch() not overridden");
  }
  call(kernels_, *this);
}

void Backend::set_lane(int lane) {
  shared_->lane = checked_lane(lane);
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
  counted(MemoryKind::pinned_host).add(p, bytes);
  return p;
}

void Backend::free_pageable(void* ptr) {
  if (!ptr) return;
  counted(MemoryKind::pinned_host).remove(ptr);
  std::free(ptr);
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
  launch([=](const KernelTable& t, Backend& self) {
    t.gemm_bf16(self, batch, trans_a, trans_b, m, n, k, alpha, a, b, beta, c);
  });
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
  launch([=](const KernelTable& t, Backend& self) {
    t.syrk_bf16(self, batch, n, k, alpha, a, beta, c);
  });
}

// The other kernels: each forwards its arguments to the table through launch().
void Backend::sum_squares_bf16(int64_t batch, int64_t elems, const bf16* x, float* out) {
  launch([=](const KernelTable& t, Backend& self) {
    t.sum_squares(self, batch, elems, DType::bf16, x, out);
  });
}
void Backend::sum_squares_f32(int64_t n, const float* x, float* out) {
  launch(
      [=](const KernelTable& t, Backend& self) { t.sum_squares(self, 1, n, DType::f32, x, out); });
}
void Backend::scale_bf16(int64_t batch, int64_t elems, const bf16* x, const float* scale, bf16* y) {
  launch(
      [=](const KernelTable& t, Backend& self) { t.scale_bf16(self, batch, elems, x, scale, y); });
}
void Backend::scale_bf16_by(int64_t elems, float s, const bf16* x, bf16* y) {
  launch([=](const KernelTable& t, Backend& self) { t.scale_bf16_by(self, elems, s, x, y); });
}
void Backend::ns_scale(int64_t batch, const float* sum_sq, double norm_scale, double eps,
                       float* scale) {
  launch([=](const KernelTable& t, Backend& self) {
    t.ns_scale(self, batch, sum_sq, norm_scale, eps, scale);
  });
}
void Backend::transpose_bf16(int64_t batch, int64_t rows, int64_t cols, const bf16* x, bf16* y) {
  launch([=](const KernelTable& t, Backend& self) {
    t.transpose_bf16(self, batch, rows, cols, x, y);
  });
}
void Backend::elementwise(const Elementwise& op) {
  launch([=](const KernelTable& t, Backend& self) { t.elementwise(self, op); });
}
void Backend::cast_to_bf16(int64_t n, const float* x, bf16* y) {
  elementwise(CastToBf16{n, x, y});
}
void Backend::cast_to_f32(int64_t n, const bf16* x, float* y) {
  elementwise(CastToF32{n, x, y});
}
void Backend::momentum_f32(int64_t n, float mu, bool nesterov, const float* g, float* m, bf16* u) {
  elementwise(MomentumF32{n, mu, nesterov, g, m, u});
}
void Backend::momentum_bf16(int64_t n, float mu, bool nesterov, const float* g, bf16* m, bf16* u) {
  elementwise(MomentumBf16{n, mu, nesterov, g, m, u});
}
void Backend::apply_update(int64_t n, float decay, float s, const bf16* o, float* w) {
  elementwise(ApplyUpdate{n, decay, s, o, w});
}
void Backend::adamw(int64_t n, float lr, float beta1, float beta2, float eps, float wd,
                    int64_t step, const float* g, float* w, float* m, float* v) {
  elementwise(Adamw{n, lr, beta1, beta2, eps, wd, step, g, w, m, v});
}

// --- the kernel table's defaults, through the backend's own entries and memory (`self`).
namespace {

void default_syrk_bf16(Backend& self, int64_t batch, int64_t n, int64_t k, float alpha,
                       const MatrixBatch& a, float beta, const MatrixBatch& c) {
  self.kernels().gemm_bf16(self, batch, false, true, n, n, k, alpha, a, a, beta, c);
}

void default_scale_bf16_by(Backend& self, int64_t elems, float s, const bf16* x, bf16* y) {
  if (elems <= 0) return;
  void* factor = self.alloc(sizeof(float));
  self.copy_to_device(factor, &s, sizeof s);
  self.kernels().scale_bf16(self, 1, elems, x, static_cast<const float*>(factor), y);
  self.free(factor);
}

void default_ns_scale(Backend& self, int64_t batch, const float* sum_sq, double norm_scale,
                      double eps, float* scale) {
  std::vector<float> host(batch);
  self.copy_to_host(host.data(), sum_sq, batch * sizeof(float));
  for (float& v : host) {
    v = static_cast<float>(1.0 / (norm_scale * std::sqrt(static_cast<double>(v)) + eps));
  }
  self.copy_to_device(scale, host.data(), batch * sizeof(float));
}

void default_transpose_bf16(Backend& self, int64_t batch, int64_t rows, int64_t cols, const bf16* x,
                            bf16* y) {
  const int64_t elems = rows * cols;
  std::vector<bf16> in(batch * elems), out(batch * elems);
  self.copy_to_host(in.data(), x, in.size() * sizeof(bf16));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j)
        out[b * elems + j * rows + i] = in[b * elems + i * cols + j];
    }
  }
  self.copy_to_device(y, out.data(), out.size() * sizeof(bf16));
}

void require(const void* entry, const char* name) {
  if (entry == nullptr) {
    throw std::logic_error(std::string("kernel table: the required entry ") + name + " is null");
  }
}

}  // namespace

KernelTable with_defaults(KernelTable t) {
  require(reinterpret_cast<const void*>(t.gemm_bf16), "gemm_bf16");
  require(reinterpret_cast<const void*>(t.sum_squares), "sum_squares");
  require(reinterpret_cast<const void*>(t.scale_bf16), "scale_bf16");
  require(reinterpret_cast<const void*>(t.elementwise), "elementwise");
  if (!t.syrk_bf16) t.syrk_bf16 = default_syrk_bf16;
  if (!t.scale_bf16_by) t.scale_bf16_by = default_scale_bf16_by;
  if (!t.ns_scale) t.ns_scale = default_ns_scale;
  if (!t.transpose_bf16) t.transpose_bf16 = default_transpose_bf16;
  return t;
}

}  // namespace muonplan::exec
