// fp64 reference Newton-Schulz (ns_reference.h): plain loops, each output element summed in
// index order, so the result does not depend on the number of threads either.
#include "muonplan/exec/ns_reference.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "muonplan/exec/newton_schulz.h"

namespace muonplan::exec {
namespace {

// c[m, n] = a[m, k] * b[k, n] + beta * c (row-major, i-k-j order).
void matmul(int64_t m, int64_t n, int64_t k, const double* a, const double* b, double beta,
            double* c) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < m; ++i) {
    double* ci = c + i * n;
    for (int64_t j = 0; j < n; ++j) ci[j] *= beta;
    for (int64_t p = 0; p < k; ++p) {
      const double aip = a[i * k + p];
      const double* bp = b + p * n;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) ci[j] += aip * bp[j];
    }
  }
}

}  // namespace

void newton_schulz_reference(const NsSchedule& schedule, int64_t rows, int64_t cols,
                             const double* u, double* out) {
  const bool transpose = rows > cols;
  const int64_t m = std::min(rows, cols), n = std::max(rows, cols);
  std::vector<double> x(m * n), xt(n * m), next(m * n), a(m * m), b(m * m);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      (transpose ? x[j * n + i] : x[i * n + j]) = u[i * cols + j];
    }
  }
  double sum_sq = 0;
  for (double v : x) sum_sq += v * v;
  const double inv = 1.0 / (schedule.norm_scale * std::sqrt(sum_sq) + kNsEps);
  for (double& v : x) v *= inv;

  for (const NsCoefficients& coef : schedule.steps) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) xt[j * m + i] = x[i * n + j];
    }
    std::fill(a.begin(), a.end(), 0.0);
    matmul(m, m, n, x.data(), xt.data(), 0.0, a.data());  // A = X X^T
    std::fill(b.begin(), b.end(), 0.0);
    matmul(m, m, m, a.data(), a.data(), 0.0, b.data());  // B = b A + c A A
    for (size_t i = 0; i < b.size(); ++i) b[i] = coef.b * a[i] + coef.c * b[i];
    next = x;
    for (double& v : next) v *= coef.a;
    matmul(m, n, m, b.data(), x.data(), 1.0, next.data());  // a X + B X
    x.swap(next);
  }
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      out[i * cols + j] = transpose ? x[j * n + i] : x[i * n + j];
    }
  }
}

}  // namespace muonplan::exec
