// Per-element formulas of the host kernels (host_kernels.h), shared by the plain scalar loops
// (host_kernels_scalar.cc) and the tails of the AVX2 loops (cpu_host_kernels.cc). They are the
// CPU backend's formulas (cpu_backend.cc) with each fp32 operation written in the same order, so
// that, with -ffp-contract=off, every form rounds alike.
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "cpu_kernels.h"
#include "muonplan/exec/bf16.h"

namespace muonplan::exec::host::formula {

inline float fold_f32(float mu, float scale, float g, float m) {
  return mu * m + scale * g;
}

inline bf16 fold_bf16(float mu, float scale, float g, bf16 m) {
  const float gb = to_float(cpu::to_bf16_fast(scale * g));
  return cpu::to_bf16_fast(mu * to_float(m) + gb);
}

inline float add_update(float decay, bf16 u, float w) {
  return w * decay + to_float(u);
}

inline float triad(float q, float b, float c) {
  return b + q * c;
}

// The fp32 constants of one AdamW call, computed as Backend::adamw computes them (bias
// corrections in double, then rounded to fp32 once).
struct AdamwConstants {
  float beta1, beta2, c1, c2, decay, step_size, sqrt_bc2, eps;
};

inline AdamwConstants adamw_constants(float lr, float beta1, float beta2, float eps, float wd,
                                      int64_t step) {
  if (step < 1) throw std::invalid_argument("adamw: step must be >= 1 (bias correction)");
  const double bc1 = 1.0 - std::pow(static_cast<double>(beta1), static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(static_cast<double>(beta2), static_cast<double>(step));
  return AdamwConstants{beta1,
                        beta2,
                        1.0f - beta1,
                        1.0f - beta2,
                        1.0f - lr * wd,
                        static_cast<float>(lr / bc1),
                        static_cast<float>(std::sqrt(bc2)),
                        eps};
}

inline void adamw(const AdamwConstants& k, float g, float& w, float& m, float& v) {
  const float mi = k.beta1 * m + k.c1 * g;
  const float vi = k.beta2 * v + k.c2 * g * g;
  m = mi;
  v = vi;
  w = w * k.decay - k.step_size * (mi / (std::sqrt(vi) / k.sqrt_bc2 + k.eps));
}

}  // namespace muonplan::exec::host::formula
