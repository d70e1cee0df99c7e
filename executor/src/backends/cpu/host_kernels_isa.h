// The vector forms of the host kernels, one namespace per instruction set (host_kernels.h's
// Isa); host_kernels.cc calls the one the CPU runs. avx512_bf16 has only the kernels that round
// to bf16: the others are avx512's.
#pragma once

#include <cstdint>

#include "muonplan/exec/bf16.h"

#define MUONPLAN_HOST_KERNELS_ALL                                                              \
  void fold_momentum_f32(int64_t n, float mu, float scale, const float* g, float* m);          \
  void fold_momentum_bf16(int64_t n, float mu, float scale, const float* g, bf16* m);          \
  void add_update_bf16(int64_t n, float decay, const bf16* u, float* w);                       \
  void adamw(int64_t n, float lr, float beta1, float beta2, float eps, float wd, int64_t step, \
             const float* g, float* w, float* m, float* v);                                    \
  void cast_to_bf16(int64_t n, const float* x, bf16* y);                                       \
  void triad(int64_t n, float q, const float* b, const float* c, float* a);

namespace muonplan::exec::host {
namespace avx2 {
MUONPLAN_HOST_KERNELS_ALL  // cpu_host_kernels.cc
}
namespace avx512 {
MUONPLAN_HOST_KERNELS_ALL  // host_kernels_avx512.cc
}
namespace avx512_bf16 {  // host_kernels_avx512.cc
void fold_momentum_bf16(int64_t n, float mu, float scale, const float* g, bf16* m);
void cast_to_bf16(int64_t n, const float* x, bf16* y);
}  // namespace avx512_bf16
}  // namespace muonplan::exec::host

#undef MUONPLAN_HOST_KERNELS_ALL
