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
#include "muonplan/exec/optimizer_formulas.h"

namespace muonplan::exec::host {
namespace {

constexpr int64_t kBlock = int64_t{1} << 14;        // elements per OpenMP block, a multiple of 32
constexpr int64_t kParallelMin = int64_t{1} << 16;  // below this, one thread (fork cost)
constexpr int64_t kStreamMin = int64_t{1} << 20;    // from here, write-only outputs bypass cache

// As cpu_host_kernels.cc's for_blocks: fixed blocks, static split, stores drained at the end.
template <class Body>
void for_blocks(int64_t n, bool streaming, const Body& body) {
  const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel if (n >= kParallelMin)
  {
#pragma omp for schedule(static) nowait
    for (int64_t b = 0; b < blocks; ++b) body(b * kBlock, std::min(n, (b + 1) * kBlock));
    if (streaming) _mm_sfence();
  }
}

// 512-bit non-temporal stores need 64-byte alignment; blocks start at multiples of kBlock.
bool stream_output(int64_t n, const void* out) {
  return n >= kStreamMin && reinterpret_cast<uintptr_t>(out) % 64 == 0;
}

// Software prefetch distance, in elements: 2 KiB of fp32 ahead. The kernels that read one fp32
// stream per element and write bf16 (fold_momentum_bf16, cast_to_bf16) move 6-8 B an element
// against triad's 12, and on Sapphire Rapids (2-core VM, measured by bench cpu-kernels) the
// hardware prefetcher alone left them at 61-68% of triad's GB/s; prefetching the fp32 input
// this far ahead lifts them to 93-97% and 87-89% (fold, cast; quiet machine, 64 Mi elements).
// 1, 3, 4 and 8 KiB ahead gave the same or less; the fpclass denormal test saves 1-2%.
constexpr int64_t kPrefetchAhead = 512;

void prefetch(const void* p) {
  _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0);
}

int64_t vector_end(int64_t first, int64_t last, int64_t width) {
  return first + (last - first) / width * width;
}

// 16 bf16 -> 16 fp32, exact.
__m512 widen(__m256i h) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
__m512 load_bf16(const bf16* p) {
  return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// to_bf16 on 16 lanes by its integer rule: the bf16 bits in each 32-bit lane's low half.
__m512i round_lanes(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i hi = _mm512_srli_epi32(u, 16);
  const __m512i bias =
      _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(hi, _mm512_set1_epi32(1)));
  const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
  const __mmask16 is_nan = _mm512_cmpgt_epu32_mask(
      _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
  return _mm512_mask_or_epi32(rounded, is_nan, hi, _mm512_set1_epi32(0x0040));
}

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
  return _mm512_cvtepi32_epi16(round_lanes(x));
}

// to_bf16 of 32 lanes (lo: elements 0-15, hi: 16-31) by the integer rule, packed in order.
__m512i round32(__m512 lo, __m512 hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(round16<false>(lo)), round16<false>(hi), 1);
}

void fold_f32_block(int64_t first, int64_t last, float mu, float scale, const float* g, float* m) {
  const __m512 vmu = _mm512_set1_ps(mu), vscale = _mm512_set1_ps(scale);
  const int64_t end = vector_end(first, last, 16);
  int64_t i = first;
  for (; i < end; i += 16) {
    _mm512_storeu_ps(m + i, _mm512_add_ps(_mm512_mul_ps(vmu, _mm512_loadu_ps(m + i)),
                                          _mm512_mul_ps(vscale, _mm512_loadu_ps(g + i))));
  }
  for (; i < last; ++i) m[i] = formula::fold_f32(mu, m[i], scale * g[i]);
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
    const __m512 gb = widen(round16<kHw>(_mm512_mul_ps(vscale, _mm512_loadu_ps(g + i))));
    const __m512 mi = _mm512_add_ps(_mm512_mul_ps(vmu, load_bf16(m + i)), gb);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(m + i), round16<kHw>(mi));
  }
  for (; i < last; ++i) m[i] = formula::fold_bf16(mu, m[i], scale * g[i]);
}

void add_update_block(int64_t first, int64_t last, float decay, const bf16* u, float* w) {
  const __m512 vdecay = _mm512_set1_ps(decay);
  const int64_t end = vector_end(first, last, 16);
  int64_t i = first;
  for (; i < end; i += 16) {
    _mm512_storeu_ps(
        w + i, _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(w + i), vdecay), load_bf16(u + i)));
  }
  for (; i < last; ++i) w[i] = formula::add_update(decay, u[i], w[i]);
}

void adamw_block(int64_t first, int64_t last, formula::AdamwConstants k, const float* g, float* w,
                 float* m, float* v) {
  const __m512 b1 = _mm512_set1_ps(k.beta1), b2 = _mm512_set1_ps(k.beta2);
  const __m512 c1 = _mm512_set1_ps(k.c1), c2 = _mm512_set1_ps(k.c2);
  const __m512 decay = _mm512_set1_ps(k.decay), step_size = _mm512_set1_ps(k.step_size);
  const __m512 sqrt_bc2 = _mm512_set1_ps(k.sqrt_bc2), eps = _mm512_set1_ps(k.eps);
  const int64_t end = vector_end(first, last, 16);
  int64_t i = first;
  for (; i < end; i += 16) {
    const __m512 gi = _mm512_loadu_ps(g + i);
    const __m512 mi =
        _mm512_add_ps(_mm512_mul_ps(b1, _mm512_loadu_ps(m + i)), _mm512_mul_ps(c1, gi));
    const __m512 vi = _mm512_add_ps(_mm512_mul_ps(b2, _mm512_loadu_ps(v + i)),
                                    _mm512_mul_ps(_mm512_mul_ps(c2, gi), gi));
    const __m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(vi), sqrt_bc2), eps);
    const __m512 wi = _mm512_sub_ps(_mm512_mul_ps(_mm512_loadu_ps(w + i), decay),
                                    _mm512_mul_ps(step_size, _mm512_div_ps(mi, denom)));
    _mm512_storeu_ps(m + i, mi);
    _mm512_storeu_ps(v + i, vi);
    _mm512_storeu_ps(w + i, wi);
  }
  for (; i < last; ++i) formula::adamw(k, g[i], w[i], m[i], v[i]);
}

template <bool kStream>
void store64(bf16* y, __m512i v) {
  if constexpr (kStream) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(y), v);
  } else {
    _mm512_storeu_si512(y, v);
  }
}

// 64 elements a step (four cache lines of input, two of output): with vcvtneps2bf16 the four
// vectors share one denormal test and one branch, which the 32-element step paid twice; the
// integer rule is taken for all 64 where any lane is denormal, so the bits stay to_bf16's.
template <bool kHw, bool kStream>
void cast_block(int64_t first, int64_t last, const float* x, bf16* y) {
  const int64_t end = vector_end(first, last, 64);
  int64_t i = first;
  for (; i < end; i += 64) {
    for (int line = 0; line < 64; line += 16) prefetch(x + i + kPrefetchAhead + line);
    const __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);
    const __m512 c = _mm512_loadu_ps(x + i + 32), d = _mm512_loadu_ps(x + i + 48);
    if constexpr (kHw) {
      if ((denormal(a) | denormal(b) | denormal(c) | denormal(d)) == 0) {
        store64<kStream>(y + i, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(b, a)));
        store64<kStream>(y + i + 32, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(d, c)));
        continue;
      }
    }
    store64<kStream>(y + i, round32(a, b));
    store64<kStream>(y + i + 32, round32(c, d));
  }
  for (; i < last; ++i) y[i] = to_bf16(x[i]);
}

template <bool kStream>
void triad_block(int64_t first, int64_t last, float q, const float* b, const float* c, float* a) {
  const __m512 vq = _mm512_set1_ps(q);
  const int64_t end = vector_end(first, last, 16);
  int64_t i = first;
  for (; i < end; i += 16) {
    const __m512 r =
        _mm512_add_ps(_mm512_loadu_ps(b + i), _mm512_mul_ps(vq, _mm512_loadu_ps(c + i)));
    if constexpr (kStream) {
      _mm512_stream_ps(a + i, r);
    } else {
      _mm512_storeu_ps(a + i, r);
    }
  }
  for (; i < last; ++i) a[i] = formula::triad(q, b[i], c[i]);
}

template <bool kHw>
void fold_bf16(int64_t n, float mu, float scale, const float* g, bf16* m) {
  for_blocks(n, false, [=](int64_t first, int64_t last) {
    fold_bf16_block<kHw>(first, last, mu, scale, g, m);
  });
}

template <bool kHw>
void cast(int64_t n, const float* x, bf16* y) {
  if (stream_output(n, y)) {
    for_blocks(n, true,
               [=](int64_t first, int64_t last) { cast_block<kHw, true>(first, last, x, y); });
  } else {
    for_blocks(n, false,
               [=](int64_t first, int64_t last) { cast_block<kHw, false>(first, last, x, y); });
  }
}

}  // namespace

// The kernels without bf16 rounding are the same in both forms.
namespace avx512 {

void fold_momentum_f32(int64_t n, float mu, float scale, const float* g, float* m) {
  for_blocks(n, false,
             [=](int64_t first, int64_t last) { fold_f32_block(first, last, mu, scale, g, m); });
}

void fold_momentum_bf16(int64_t n, float mu, float scale, const float* g, bf16* m) {
  fold_bf16<false>(n, mu, scale, g, m);
}

void add_update_bf16(int64_t n, float decay, const bf16* u, float* w) {
  for_blocks(n, false,
             [=](int64_t first, int64_t last) { add_update_block(first, last, decay, u, w); });
}

void adamw(int64_t n, float lr, float beta1, float beta2, float eps, float wd, int64_t step,
           const float* g, float* w, float* m, float* v) {
  const formula::AdamwConstants k = formula::adamw_constants(lr, beta1, beta2, eps, wd, step);
  for_blocks(n, false,
             [=](int64_t first, int64_t last) { adamw_block(first, last, k, g, w, m, v); });
}

void cast_to_bf16(int64_t n, const float* x, bf16* y) {
  cast<false>(n, x, y);
}

void triad(int64_t n, float q, const float* b, const float* c, float* a) {
  if (stream_output(n, a)) {
    for_blocks(n, true,
               [=](int64_t first, int64_t last) { triad_block<true>(first, last, q, b, c, a); });
  } else {
    for_blocks(n, false,
               [=](int64_t first, int64_t last) { triad_block<false>(first, last, q, b, c, a); });
  }
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
