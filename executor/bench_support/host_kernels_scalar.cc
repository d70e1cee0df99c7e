// The plain scalar loops of the host kernels: the tests' bit-for-bit reference and the
// baseline of `muonplan bench cpu-kernels`. One thread, one element per iteration; this file is
// compiled without AVX2 and with -fno-tree-vectorize (executor/CMakeLists.txt), so the loops
// stay scalar as written.
#include "muonplan/exec/host_kernels.h"
#include "muonplan/exec/optimizer_formulas.h"

namespace muonplan::exec::host::scalar {

void fold_momentum_f32(int64_t n, float mu, float scale, const float* g, float* m) {
  for (int64_t i = 0; i < n; ++i) m[i] = formula::fold_f32(mu, m[i], scale * g[i]);
}

void fold_momentum_bf16(int64_t n, float mu, float scale, const float* g, bf16* m) {
  for (int64_t i = 0; i < n; ++i) m[i] = formula::fold_bf16(mu, m[i], scale * g[i]);
}

void add_update_bf16(int64_t n, float decay, const bf16* u, float* w) {
  for (int64_t i = 0; i < n; ++i) w[i] = formula::add_update(decay, u[i], w[i]);
}

void adamw(int64_t n, float lr, float beta1, float beta2, float eps, float wd, int64_t step,
           const float* g, float* w, float* m, float* v) {
  const formula::AdamwConstants k = formula::adamw_constants(lr, beta1, beta2, eps, wd, step);
  for (int64_t i = 0; i < n; ++i) formula::adamw(k, g[i], w[i], m[i], v[i]);
}

void cast_to_bf16(int64_t n, const float* x, bf16* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = to_bf16(x[i]);
}

void triad(int64_t n, float q, const float* b, const float* c, float* a) {
  for (int64_t i = 0; i < n; ++i) a[i] = formula::triad(q, b[i], c[i]);
}

}  // namespace muonplan::exec::host::scalar
