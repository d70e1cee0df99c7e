// The host kernels of host_kernels.h with AVX2 intrinsics and OpenMP, the `avx2` Isa (this file is
// compiled with -mavx2; the library with -ffp-contract=off, so no multiply-add below becomes an
// FMA): host_kernels_simd.h's loops on 8 fp32 lanes, and the bf16 rounding of to_bf16's integer
// rule on 8 lanes, bit for bit as the scalar loops.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "backends/cpu/host_kernels_isa.h"
#include "backends/cpu/host_kernels_simd.h"
#include "muonplan/exec/optimizer_formulas.h"

namespace muonplan::exec::host {
namespace {

template <bool kStream>
void store(bf16* p, __m256i v) {
  if constexpr (kStream) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(p), v);
  } else {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
  }
}

using Avx2 = Vec<256>;

// to_bf16 on 8 lanes (as cpu::f32_to_bf16): each 32-bit lane holds the bf16 bits in its low half.
__m256i round_bf16(__m256 x) {
  return Avx2::round_lanes(x);
}

// The fp32 value of round_bf16's lanes: to_float(to_bf16(x)).
__m256 bf16_value(__m256i r) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(r, 16));
}

// Two vectors of round_bf16 lanes (elements 0-7, 8-15) -> 16 bf16 in order. The lanes are at
// most 0xffff, so the unsigned saturation of packus never clips.
__m256i pack_bf16(__m256i lo, __m256i hi) {
  return _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xd8);
}

// Arguments by value, as host_kernels_simd.h's blocks take them.
void fold_bf16_block(int64_t first, int64_t last, float mu, float scale, const float* g, bf16* m) {
  const __m256 vmu = _mm256_set1_ps(mu), vscale = _mm256_set1_ps(scale);
  // 8 elements: bf16(mu * float(m) + float(bf16(scale * g))), as round_bf16 lanes.
  const auto fold8 = [vmu, vscale](__m256 gv, __m256 mv) {
    const __m256 gb = bf16_value(round_bf16(_mm256_mul_ps(vscale, gv)));
    return round_bf16(_mm256_add_ps(_mm256_mul_ps(vmu, mv), gb));
  };
  const int64_t end = vector_end(first, last, 16);
  int64_t i = first;
  for (; i < end; i += 16) {
    const __m256i mh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(m + i));
    const __m256i lo = fold8(_mm256_loadu_ps(g + i), Avx2::widen(_mm256_castsi256_si128(mh)));
    const __m256i hi =
        fold8(_mm256_loadu_ps(g + i + 8), Avx2::widen(_mm256_extracti128_si256(mh, 1)));
    store<false>(m + i, pack_bf16(lo, hi));
  }
  for (; i < last; ++i) m[i] = formula::fold_bf16(mu, m[i], scale * g[i]);
}

template <bool kStream>
void cast_block(int64_t first, int64_t last, const float* x, bf16* y) {
  const int64_t end = vector_end(first, last, 16);
  int64_t i = first;
  for (; i < end; i += 16) {
    const __m256i lo = round_bf16(_mm256_loadu_ps(x + i));
    const __m256i hi = round_bf16(_mm256_loadu_ps(x + i + 8));
    store<kStream>(y + i, pack_bf16(lo, hi));
  }
  for (; i < last; ++i) y[i] = to_bf16(x[i]);
}

}  // namespace

namespace avx2 {

MUONPLAN_PLAIN_HOST_KERNELS(Avx2)

void fold_momentum_bf16(int64_t n, float mu, float scale, const float* g, bf16* m) {
  for_blocks(n, false,
             [=](int64_t first, int64_t last) { fold_bf16_block(first, last, mu, scale, g, m); });
}

void cast_to_bf16(int64_t n, const float* x, bf16* y) {
  for_output_blocks<Avx2>(n, y, [=](int64_t first, int64_t last, auto stream) {
    cast_block<decltype(stream)::value>(first, last, x, y);
  });
}

}  // namespace avx2

}  // namespace muonplan::exec::host
