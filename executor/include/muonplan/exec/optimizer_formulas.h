// The per-element formulas of the optimizer step, written once. The CPU backend
// (cpu_backend.cc), the host kernels' scalar loops and the tails of their AVX2 loops
// (host_kernels_scalar.cc, cpu_host_kernels.cc) and the CUDA kernels (cuda_kernels.cu) all call
// these, so every form computes the same operations in the same order (docs/executor-numerics.md,
// "bf16 emulation rules").
//
// Each fp32 operation rounds as written: the library is built with -ffp-contract=off and the
// kernels with nvcc -fmad=false, so no a * b + c becomes an FMA. The order of the operations is
// part of the result: reordering one changes last bits, and with them the tests' digests.
//
// C++17 (the .cu files include it); what runs on the device is MUONPLAN_HD and throws nothing.
// std::sqrt is IEEE on the device too (sqrt.rn; nvcc's default -prec-sqrt=true).
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "muonplan/exec/bf16.h"
#include "muonplan/planfile/decay_factor.h"

namespace muonplan::exec::formula {

// --- momentum

// The fp32 fold m' = mu * m + g. Also the Nesterov look-ahead mu * m' + g, and the host fold of
// `full` offload with g = scale * g.
MUONPLAN_HD inline float fold_f32(float mu, float m, float g) {
  return mu * m + g;
}

// The bf16 fold m' = bf16(mu * float(m) + float(bf16(g))).
MUONPLAN_HD inline bf16 fold_bf16(float mu, bf16 m, float g) {
  const float gb = to_float(to_bf16(g));
  return to_bf16(mu * to_float(m) + gb);
}

// Backend::momentum_f32 on one element: folds m in place and returns the NS input
// u = bf16(nesterov ? mu * m' + g : m').
MUONPLAN_HD inline bf16 momentum_f32(float mu, bool nesterov, float g, float& m) {
  const float mi = fold_f32(mu, m, g);
  m = mi;
  return to_bf16(nesterov ? fold_f32(mu, mi, g) : mi);
}

// Backend::momentum_bf16 on one element: m' = fold_bf16, u = nesterov ? bf16(mu * m' + bf16(g))
// : m'.
MUONPLAN_HD inline bf16 momentum_bf16(float mu, bool nesterov, float g, bf16& m) {
  const bf16 mi = fold_bf16(mu, m, g);
  m = mi;
  return nesterov ? fold_bf16(mu, mi, g) : mi;
}

// --- applying an update (decay = 1 - lr * wd, from the caller)

// Backend::apply_update: w' = w * decay - s * float(o).
MUONPLAN_HD inline float apply_update(float decay, float s, bf16 o, float w) {
  return w * decay - s * to_float(o);
}

// The host's add_update_bf16: w' = w * decay + float(u), u the bf16 update -s * NS(M) the device
// computed (the bits of apply_update with s = -1).
MUONPLAN_HD inline float add_update(float decay, bf16 u, float w) {
  return w * decay + to_float(u);
}

// --- AdamW

// The fp32 constants of one AdamW call: c1 = 1 - beta1, c2 = 1 - beta2, decay = 1 - lr * wd in
// fp32; the bias corrections in double, step_size = fp32(lr / (1 - beta1^step)) and
// sqrt_bc2 = fp32(sqrt(1 - beta2^step)), each rounded to fp32 once.
struct AdamwConstants {
  float beta1, beta2, c1, c2, decay, step_size, sqrt_bc2, eps;
};

// Host only. Throws std::invalid_argument when step < 1 (no bias correction exists).
inline AdamwConstants adamw_constants(float lr, float beta1, float beta2, float eps, float wd,
                                      int64_t step) {
  if (step < 1) throw std::invalid_argument("adamw: step must be >= 1 (bias correction)");
  const double bc1 = 1.0 - std::pow(static_cast<double>(beta1), static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(static_cast<double>(beta2), static_cast<double>(step));
  return AdamwConstants{beta1,
                        beta2,
                        1.0f - beta1,
                        1.0f - beta2,
                        adamw_decay_factor(lr, wd),
                        static_cast<float>(lr / bc1),
                        static_cast<float>(std::sqrt(bc2)),
                        eps};
}

// Decoupled AdamW on one element, in place:
//   m' = beta1 * m + c1 * g;   v' = beta2 * v + c2 * g * g
//   w' = w * decay - step_size * (m' / (sqrt(v') / sqrt_bc2 + eps))
MUONPLAN_HD inline void adamw(const AdamwConstants& k, float g, float& w, float& m, float& v) {
  const float mi = k.beta1 * m + k.c1 * g;
  const float vi = k.beta2 * v + k.c2 * g * g;
  m = mi;
  v = vi;
  w = w * k.decay - k.step_size * (mi / (std::sqrt(vi) / k.sqrt_bc2 + k.eps));
}

// --- Newton-Schulz normalization

// Backend::ns_scale: fp32(1 / (norm_scale * sqrt(double(sum_sq)) + eps)), in double.
MUONPLAN_HD inline float ns_scale(double norm_scale, double eps, float sum_sq) {
  return static_cast<float>(1.0 / (norm_scale * std::sqrt(static_cast<double>(sum_sq)) + eps));
}

// Backend::scale_bf16: bf16(float(x) * s).
MUONPLAN_HD inline bf16 scale_bf16(bf16 x, float s) {
  return to_bf16(to_float(x) * s);
}

// --- the bandwidth yardstick

// STREAM triad a = b + q * c (`muonplan bench cpu-kernels`).
MUONPLAN_HD inline float triad(float q, float b, float c) {
  return b + q * c;
}

}  // namespace muonplan::exec::formula
