// The vector forms of the host kernels, one namespace per instruction set (host_kernels.h's
// Isa); host_kernels.cc calls the one the CPU runs. avx512_bf16 has only the kernels that round
// to bf16: the others are avx512's.
#pragma once

#include "muonplan/exec/host_kernels.h"  // MUONPLAN_HOST_KERNELS

namespace muonplan::exec::host {
namespace avx2 {
MUONPLAN_HOST_KERNELS  // cpu_host_kernels.cc
}
namespace avx512 {
MUONPLAN_HOST_KERNELS  // host_kernels_avx512.cc
}
namespace avx512_bf16 {  // host_kernels_avx512.cc
void fold_momentum_bf16(int64_t n, float mu, float scale, const float* g, bf16* m);
void cast_to_bf16(int64_t n, const float* x, bf16* y);
}  // namespace avx512_bf16
}  // namespace muonplan::exec::host
