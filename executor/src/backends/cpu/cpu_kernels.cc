// AVX2 kernels of the CPU backend: the bf16 <-> fp32 conversions around every GEMM (they must
// be cheap next to sgemm) and the sum of squares of the NS norm.
#include "backends/cpu/cpu_kernels.h"

#include <immintrin.h>

#include <algorithm>

namespace muonplan::exec::cpu {

void bf16_to_f32(const bf16* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    const __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
    _mm256_storeu_ps(y + i, _mm256_castsi256_ps(w));
  }
  for (; i < n; ++i) y[i] = to_float(x[i]);
}

void f32_to_bf16(const float* x, bf16* y, int64_t n) {
  const __m256i one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7fff);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  const __m256i quiet = _mm256_set1_epi32(0x0040);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i u = _mm256_castps_si256(_mm256_loadu_ps(x + i));
    const __m256i hi = _mm256_srli_epi32(u, 16);
    const __m256i bias = _mm256_add_epi32(half, _mm256_and_si256(hi, one));
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
    // Both sides are below 2^31 after the mask, so the signed compare is exact.
    const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
    const __m256i r = _mm256_blendv_epi8(rounded, _mm256_or_si256(hi, quiet), is_nan);
    const __m128i packed =
        _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), packed);
  }
  for (; i < n; ++i) y[i] = to_bf16(x[i]);
}

double sum_squares(const float* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(x[i]) * double(x[i]);
  return s;
}

double sum_squares(const bf16* x, int64_t n) {
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    const __m256 f = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    const __m256d a = _mm256_cvtps_pd(_mm256_castps256_ps128(f));
    const __m256d b = _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1));
    lo = _mm256_add_pd(lo, _mm256_mul_pd(a, a));
    hi = _mm256_add_pd(hi, _mm256_mul_pd(b, b));
  }
  alignas(32) double lanes[8];
  _mm256_store_pd(lanes, lo);
  _mm256_store_pd(lanes + 4, hi);
  double s = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) +
             ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
  for (; i < n; ++i) {
    const double v = to_float(x[i]);
    s += v * v;
  }
  return s;
}

void transpose(const bf16* x, int64_t rows, int64_t cols, int64_t ldx, bf16* y, int64_t ldy) {
  constexpr int64_t kTile = 32;
  for (int64_t i0 = 0; i0 < rows; i0 += kTile) {
    for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
      const int64_t i1 = std::min(rows, i0 + kTile), j1 = std::min(cols, j0 + kTile);
      for (int64_t j = j0; j < j1; ++j) {
        for (int64_t i = i0; i < i1; ++i) y[j * ldy + i] = x[i * ldx + j];
      }
    }
  }
}

}  // namespace muonplan::exec::cpu
