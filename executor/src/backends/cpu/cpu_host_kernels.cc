// The host kernels of host_kernels.h with AVX2 intrinsics and OpenMP, the `avx2` Isa (this file is
// compiled with -mavx2; the library with -ffp-contract=off, so no multiply-add below becomes an
// FMA).
//
// Each kernel runs fixed blocks of kBlock elements, split statically over the threads; a block
// runs 8 or 16 elements per vector step and its last few elements through the scalar formula
// (optimizer_formulas.h). Every lane computes the scalar formula's operations in the scalar
// order, so the results equal the scalar loops bit for bit, whatever the thread count.
//
// Outputs that are only written (the bf16 of cast_to_bf16, the triad's a) use non-temporal
// stores when the array is large and 32-byte aligned: a normal store first reads the line it
// writes (write-allocate), which costs a third more traffic on a triad. In-place outputs (m, w,
// v) were read a moment before, so they keep normal stores (measured: streaming them made adamw
// about half as fast and the fold no faster; docs/executor-numerics.md, "Host kernels").
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "backends/cpu/host_kernels_isa.h"
#include "muonplan/exec/optimizer_formulas.h"

namespace muonplan::exec::host {
namespace {

constexpr int64_t kBlock = int64_t{1} << 14;        // elements per OpenMP block, a multiple of 16
constexpr int64_t kParallelMin = int64_t{1} << 16;  // below this, one thread (fork cost)
constexpr int64_t kStreamMin = int64_t{1} << 20;    // from here, write-only outputs bypass cache

// body(first, last) on each block [first, last) of n elements. Blocks start at multiples of
// kBlock, so the vector steps of a 32-byte aligned array stay aligned in every block.
template <class Body>
void for_blocks(int64_t n, bool streaming, const Body& body) {
  const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel if (n >= kParallelMin)
  {
#pragma omp for schedule(static) nowait
    for (int64_t b = 0; b < blocks; ++b) body(b * kBlock, std::min(n, (b + 1) * kBlock));
    // Non-temporal stores are weakly ordered: drain them before the barrier that ends the call.
    if (streaming) _mm_sfence();
  }
}

bool stream_output(int64_t n, const void* out) {
  return n >= kStreamMin && reinterpret_cast<uintptr_t>(out) % 32 == 0;
}

// End of the full vector steps of `width` elements in [first, last); the rest is the tail.
int64_t vector_end(int64_t first, int64_t last, int64_t width) {
  return first + (last - first) / width * width;
}

template <bool kStream>
void store(float* p, __m256 v) {
  if constexpr (kStream) {
    _mm256_stream_ps(p, v);
  } else {
    _mm256_storeu_ps(p, v);
  }
}

template <bool kStream>
void store(bf16* p, __m256i v) {
  if constexpr (kStream) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(p), v);
  } else {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
  }
}

// 8 bf16 -> 8 fp32, exact.
__m256 widen(__m128i h) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
__m256 load_bf16(const bf16* p) {
  return widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// to_bf16 (bf16.h) on 8 lanes (as cpu::f32_to_bf16): each 32-bit lane holds the bf16 bits in
// its low half.
__m256i round_bf16(__m256 x) {
  const __m256i u = _mm256_castps_si256(x);
  const __m256i hi = _mm256_srli_epi32(u, 16);
  const __m256i bias =
      _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(hi, _mm256_set1_epi32(1)));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
  // Both sides are below 2^31 after the mask, so the signed compare is exact.
  const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                            _mm256_set1_epi32(0x7f800000));
  return _mm256_blendv_epi8(rounded, _mm256_or_si256(hi, _mm256_set1_epi32(0x0040)), is_nan);
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

// The block functions take their arguments by value, so the pointers and constants stay in
// registers: a lambda's by-reference captures would be reloaded after every store, since a
// vector store may alias anything.

void fold_f32_block(int64_t first, int64_t last, float mu, float scale, const float* g, float* m) {
  const __m256 vmu = _mm256_set1_ps(mu), vscale = _mm256_set1_ps(scale);
  const int64_t end = vector_end(first, last, 8);
  int64_t i = first;
  for (; i < end; i += 8) {
    const __m256 mi = _mm256_add_ps(_mm256_mul_ps(vmu, _mm256_loadu_ps(m + i)),
                                    _mm256_mul_ps(vscale, _mm256_loadu_ps(g + i)));
    _mm256_storeu_ps(m + i, mi);
  }
  for (; i < last; ++i) m[i] = formula::fold_f32(mu, m[i], scale * g[i]);
}

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
    const __m256i lo = fold8(_mm256_loadu_ps(g + i), widen(_mm256_castsi256_si128(mh)));
    const __m256i hi = fold8(_mm256_loadu_ps(g + i + 8), widen(_mm256_extracti128_si256(mh, 1)));
    store<false>(m + i, pack_bf16(lo, hi));
  }
  for (; i < last; ++i) m[i] = formula::fold_bf16(mu, m[i], scale * g[i]);
}

void add_update_block(int64_t first, int64_t last, float decay, const bf16* u, float* w) {
  const __m256 vdecay = _mm256_set1_ps(decay);
  const int64_t end = vector_end(first, last, 8);
  int64_t i = first;
  for (; i < end; i += 8) {
    _mm256_storeu_ps(
        w + i, _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(w + i), vdecay), load_bf16(u + i)));
  }
  for (; i < last; ++i) w[i] = formula::add_update(decay, u[i], w[i]);
}

void adamw_block(int64_t first, int64_t last, formula::AdamwConstants k, const float* g, float* w,
                 float* m, float* v) {
  const __m256 b1 = _mm256_set1_ps(k.beta1), b2 = _mm256_set1_ps(k.beta2);
  const __m256 c1 = _mm256_set1_ps(k.c1), c2 = _mm256_set1_ps(k.c2);
  const __m256 decay = _mm256_set1_ps(k.decay), step_size = _mm256_set1_ps(k.step_size);
  const __m256 sqrt_bc2 = _mm256_set1_ps(k.sqrt_bc2), eps = _mm256_set1_ps(k.eps);
  const int64_t end = vector_end(first, last, 8);
  int64_t i = first;
  for (; i < end; i += 8) {
    const __m256 gi = _mm256_loadu_ps(g + i);
    const __m256 mi =
        _mm256_add_ps(_mm256_mul_ps(b1, _mm256_loadu_ps(m + i)), _mm256_mul_ps(c1, gi));
    const __m256 vi = _mm256_add_ps(_mm256_mul_ps(b2, _mm256_loadu_ps(v + i)),
                                    _mm256_mul_ps(_mm256_mul_ps(c2, gi), gi));
    const __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vi), sqrt_bc2), eps);
    const __m256 wi = _mm256_sub_ps(_mm256_mul_ps(_mm256_loadu_ps(w + i), decay),
                                    _mm256_mul_ps(step_size, _mm256_div_ps(mi, denom)));
    _mm256_storeu_ps(m + i, mi);
    _mm256_storeu_ps(v + i, vi);
    _mm256_storeu_ps(w + i, wi);
  }
  for (; i < last; ++i) formula::adamw(k, g[i], w[i], m[i], v[i]);
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

template <bool kStream>
void triad_block(int64_t first, int64_t last, float q, const float* b, const float* c, float* a) {
  const __m256 vq = _mm256_set1_ps(q);
  const int64_t end = vector_end(first, last, 8);
  int64_t i = first;
  for (; i < end; i += 8) {
    store<kStream>(
        a + i, _mm256_add_ps(_mm256_loadu_ps(b + i), _mm256_mul_ps(vq, _mm256_loadu_ps(c + i))));
  }
  for (; i < last; ++i) a[i] = formula::triad(q, b[i], c[i]);
}

}  // namespace

namespace avx2 {

void fold_momentum_f32(int64_t n, float mu, float scale, const float* g, float* m) {
  for_blocks(n, false,
             [=](int64_t first, int64_t last) { fold_f32_block(first, last, mu, scale, g, m); });
}

void fold_momentum_bf16(int64_t n, float mu, float scale, const float* g, bf16* m) {
  for_blocks(n, false,
             [=](int64_t first, int64_t last) { fold_bf16_block(first, last, mu, scale, g, m); });
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
  if (stream_output(n, y)) {
    for_blocks(n, true, [=](int64_t first, int64_t last) { cast_block<true>(first, last, x, y); });
  } else {
    for_blocks(n, false,
               [=](int64_t first, int64_t last) { cast_block<false>(first, last, x, y); });
  }
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

}  // namespace avx2

}  // namespace muonplan::exec::host
