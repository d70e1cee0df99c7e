// openblas_sgemm_gflops (sgemm_rate.h).
#include "muonplan/exec/sgemm_rate.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace muonplan::exec {

double openblas_sgemm_gflops(int64_t n, int reps, int threads) {
  const int previous = openblas_get_num_threads();
  openblas_set_num_threads(threads);
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n, 0.0f);
  std::vector<double> seconds;
  for (int r = -1; r < std::max(reps, 1); ++r) {  // r = -1: warm-up
    const auto start = std::chrono::steady_clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    if (r >= 0) seconds.push_back(took.count());
  }
  openblas_set_num_threads(previous);
  std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
  return 2.0 * double(n) * n * n / seconds[seconds.size() / 2] / 1e9;
}

}  // namespace muonplan::exec
