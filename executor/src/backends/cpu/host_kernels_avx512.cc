// The host kernels of host_kernels.h on AVX-512 (16 fp32 lanes), in two forms: `avx512`, whose
// bf16 rounding is to_bf16's integer rule on 16 lanes, and `avx512_bf16`, which rounds with the
// CPU's vcvtneps2bf16 / vcvtne2ps2bf16. Compiled with the AVX-512 flags (executor/CMakeLists.txt)
// and -ffp-contract=off; called only where CPUID has the instructions (host_kernels.cc).
//
// Both forms equal the scalar loops bit for bit, as the AVX2 form does (cpu_host_kernels.cc): each
// lane runs the scalar formula's operations in its order. vcvtneps2bf16 rounds to nearest even
// as to_bf16 does and quiets NaNs the same way (top bits kept, 0x0040 set), but it flushes
// denormal inputs to zero (measured on Sapphire Rapids: 0x007fffff gives 0x0000, to_bf16 0x0080);
// a vector holding a denormal therefore takes the integer rule, so the bits stay to_bf16's.
// GCC 12 warns inside its own AVX-512 headers (the _mm512_undefined_* placeholders of set1,
// the shifts and the conversions are initialised with themselves): "may be used uninitialized"
// at -O3, "is used uninitialized" at the sanitizer build's -O1. A known false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "backends/cpu/host_kernels_isa.h"
#include "backends/cpu/host_kernels_simd.h"
#include "muonplan/exec/optimizer_formulas.h"

namespace muonplan::exec::host {
namespace {

// Software prefetch distance, in elements: 2 KiB of fp32 ahead. The kernels that read one fp32
// stream per element and write bf16 (fold_momentum_bf16, cast_to_bf16) move 6-8 B an element
// against triad's 12, and on Sapphire Rapids (2-core VM, measured by bench cpu-kernels) the
// hardware prefetcher alone left them at 61-68% of triad's GB/s; prefetching the fp32 input
// this far ahead lifts them to 93-97% and 87-89% (fold, cast; quiet machine, 64 Mi elements);
// cast's two read streams a block (cast_block) then 93-95%. 1, 3, 4 and 8 KiB ahead gave the
// same or less; the fpclass denormal test saves 1-2%.
constexpr int64_t kPrefetchAhead = 512;

void prefetch(const void* p) {
  _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0);
}

using Avx512 = Vec<512>;

// Lanes holding a denormal (exponent 0, mantissa not 0): where vcvtneps2bf16 differs.
// vfpclassps's class bit 5 (0x20) is "denormal", one instruction where two bit tests were.
__mmask16 denormal(__m512 x) {
  return _mm512_fpclass_ps_mask(x, 0x20);
}

// to_bf16 of 16 lanes, packed: 16 bf16 in order.
template <bool kHw>
__m256i round16(__m512 x) {
  if constexpr (kHw) {
    if (denormal(x) == 0) return reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(x));
  }
  return _mm512_cvtepi32_epi16(Avx512::round_lanes(x));
}

// to_bf16 of 32 lanes (lo: elements 0-15, hi: 16-31) by the integer rule, packed in order.
__m512i round32(__m512 lo, __m512 hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(round16<false>(lo)), round16<false>(hi), 1);
}

// m = bf16(mu * float(m) + float(bf16(scale * g))), 16 elements per step.
template <bool kHw>
void fold_bf16_block(int64_t first, int64_t last, float mu, float scale, const float* g, bf16* m) {
  const __m512 vmu = _mm512_set1_ps(mu), vscale = _mm512_set1_ps(scale);
  const int64_t end = vector_end(first, last, 16);
  int64_t i = first;
  for (; i < end; i += 16) {
    prefetch(g + i + kPrefetchAhead);
    prefetch(m + i + kPrefetchAhead);
    const __m512 gb = Avx512::widen(round16<kHw>(_mm512_mul_ps(vscale, _mm512_loadu_ps(g + i))));
    const __m512 mi = _mm512_add_ps(_mm512_mul_ps(vmu, Avx512::load_bf16(m + i)), gb);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(m + i), round16<kHw>(mi));
  }
  for (; i < last; ++i) m[i] = formula::fold_bf16(mu, m[i], scale * g[i]);
}

template <bool kStream>
void store64(bf16* y, __m512i v) {
  if constexpr (kStream) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(y), v);
  } else {
    _mm512_storeu_si512(y, v);
  }
}

// 64 elements at i (four cache lines of input, two of output): with vcvtneps2bf16 the four
// vectors share one denormal test and one branch; the integer rule is taken for all 64 where any
// lane is denormal, so the bits stay to_bf16's.
template <bool kHw, bool kStream>
void cast64(int64_t i, const float* x, bf16* y) {
  for (int line = 0; line < 64; line += 16) prefetch(x + i + kPrefetchAhead + line);
  const __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);
  const __m512 c = _mm512_loadu_ps(x + i + 32), d = _mm512_loadu_ps(x + i + 48);
  if constexpr (kHw) {
    if ((denormal(a) | denormal(b) | denormal(c) | denormal(d)) == 0) {
      store64<kStream>(y + i, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(b, a)));
      store64<kStream>(y + i + 32, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(d, c)));
      return;
    }
  }
  store64<kStream>(y + i, round32(a, b));
  store64<kStream>(y + i + 32, round32(c, d));
}

// The block's two halves as two read streams, a step of each in turn: one fp32 stream per core
// left Sapphire Rapids' prefetchers short of misses in flight (cast at 0.86-0.88 of triad, whose
// two read streams reach 1.0).
template <bool kHw, bool kStream>
void cast_block(int64_t first, int64_t last, const float* x, bf16* y) {
  const int64_t half = (last - first) / 128 * 64;
  int64_t i = first;
  for (const int64_t mid = first + half; i < mid; i += 64) {
    cast64<kHw, kStream>(i, x, y);
    cast64<kHw, kStream>(i + half, x, y);
  }
  i += half;
  for (const int64_t end = vector_end(i, last, 64); i < end; i += 64) cast64<kHw, kStream>(i, x, y);
  for (; i < last; ++i) y[i] = to_bf16(x[i]);
}

template <bool kHw>
void fold_bf16(int64_t n, float mu, float scale, const float* g, bf16* m) {
  for_blocks(n, false, [=](int64_t first, int64_t last) {
    fold_bf16_block<kHw>(first, last, mu, scale, g, m);
  });
}

template <bool kHw>
void cast(int64_t n, const float* x, bf16* y) {
  for_output_blocks<Avx512>(n, y, [=](int64_t first, int64_t last, auto stream) {
    cast_block<kHw, decltype(stream)::value>(first, last, x, y);
  });
}

}  // namespace

// The kernels without bf16 rounding are the same in both forms.
namespace avx512 {

MUONPLAN_PLAIN_HOST_KERNELS(Avx512)

void fold_momentum_bf16(int64_t n, float mu, float scale, const float* g, bf16* m) {
  fold_bf16<false>(n, mu, scale, g, m);
}

void cast_to_bf16(int64_t n, const float* x, bf16* y) {
  cast<false>(n, x, y);
}

}  // namespace avx512

namespace avx512_bf16 {

void fold_momentum_bf16(int64_t n, float mu, float scale, const float* g, bf16* m) {
  fold_bf16<true>(n, mu, scale, g, m);
}

void cast_to_bf16(int64_t n, const float* x, bf16* y) {
  cast<true>(n, x, y);
}

}  // namespace avx512_bf16

}  // namespace muonplan::exec::host
