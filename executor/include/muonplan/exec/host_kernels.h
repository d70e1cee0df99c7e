// Host-side optimizer kernels of the offload pipelines (docs/muon-step.md section 5): the momentum
// fold of `full` offload, AdamW on host state, the bf16 update added into the fp32 master, and
// the casts around the copies. Memory-bound by design: OpenMP and the widest vector form the CPU
// has, chosen by CPUID (Isa below); GB/s beside STREAM triad: `muonplan bench cpu-kernels`
// (docs/executor-numerics.md).
//
// Every kernel is elementwise with each fp32 operation rounded as written (no FMA), so the
// result does not depend on the thread count or the vector width, and equals the scalar form
// below bit for bit (a NaN result may carry the other NaN operand's payload where two NaNs
// meet). The formulas are the Backend's (backend.h), so an offloaded step computes the same
// bits as the on-device step wherever the pipeline does not round differently. The arrays of
// one call must not overlap (other than the in-place ones); any alignment works, and 32-byte
// aligned outputs of 1 Mi elements or more that are only written are stored non-temporally.
#pragma once

#include <cstdint>

#include "muonplan/exec/bf16.h"

namespace muonplan::exec::host {

// The vector forms. Every form gives the scalar loops' bits; they differ only in speed.
//   avx2         8 lanes (cpu_host_kernels.cc), the CPU backend's minimum
//   avx512       16 lanes, bf16 rounding by to_bf16's integer rule (host_kernels_avx512.cc)
//   avx512_bf16  avx512 with the CPU's vcvtneps2bf16 rounding (same file)
enum class Isa { avx2, avx512, avx512_bf16 };
const char* isa_name(Isa isa);
bool isa_supported(Isa isa);  // CPUID (and the OS's AVX-512 state)
// The form the kernels below run, chosen once per process: MUONPLAN_HOST_ISA=avx2|avx512|
// avx512_bf16 when set (std::invalid_argument where unknown or not supported here; the tests
// use it to run each form), else the widest supported.
Isa active_isa();
// Switches the form for the whole process (the tests run every form; not while a kernel runs);
// std::invalid_argument where the CPU lacks it.
void set_active_isa(Isa isa);

// The kernels, declared once (a macro, so that the plain scalar loops below and each vector form
// in host_kernels_isa.h declare the same list):
#define MUONPLAN_HOST_KERNELS                                                                     \
  /* m = mu * m + scale * g                                   (fp32 momentum) */                  \
  void fold_momentum_f32(int64_t n, float mu, float scale, const float* g, float* m);             \
  /* m = bf16(mu * float(m) + float(bf16(scale * g)))         (bf16 momentum, as the Backend) */  \
  /* With scale 1 both folds give Backend::momentum_{f32,bf16}'s m (nesterov off). */             \
  void fold_momentum_bf16(int64_t n, float mu, float scale, const float* g, bf16* m);             \
  /* w = w * decay + float(u)   (u: the bf16 update -s * NS(M) that came back from the device; */ \
  /* the bits of Backend::apply_update with s = -1) */                                            \
  void add_update_bf16(int64_t n, float decay, const bf16* u, float* w);                          \
  /* Decoupled AdamW, the formula of Backend::adamw (bias correction computed in double); */      \
  /* throws std::invalid_argument when step < 1. */                                               \
  void adamw(int64_t n, float lr, float beta1, float beta2, float eps, float wd, int64_t step,    \
             const float* g, float* w, float* m, float* v);                                       \
  /* y = bf16(x), round to nearest even (bf16.h's to_bf16). */                                    \
  void cast_to_bf16(int64_t n, const float* x, bf16* y);                                          \
  /* STREAM triad a = b + q * c: the bandwidth yardstick of `muonplan bench cpu-kernels`. */      \
  void triad(int64_t n, float q, const float* b, const float* c, float* a);

MUONPLAN_HOST_KERNELS

// Two loops of the step's host passes beside the kernels: the CPU backend's own (cpu_kernels.cc,
// one thread, an order fixed by n alone), reached here so that the step includes no header
// private to a backend (docs/architecture.md, "Folders inside a library").
// y[i] = float(x[i]): full offload's gradients widened into their fp32 accumulator.
void widen_bf16(int64_t n, const bf16* x, float* y);
// Sum of x[i]^2 in double, in index order: the non-finite check of host AdamW's weights.
double sum_squares_f32(int64_t n, const float* x);

// Plain scalar loops of the same kernels (single thread, not vectorized): the bit-for-bit
// reference of the tests and the baseline of the benchmark.
namespace scalar {
MUONPLAN_HOST_KERNELS
}  // namespace scalar

}  // namespace muonplan::exec::host
