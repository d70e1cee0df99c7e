// The host kernels' blocks and loops, written once for any vector width: the AVX2 form
// (cpu_host_kernels.cc) and the AVX-512 forms (host_kernels_avx512.cc) instantiate them with
// their vector type V, and keep only what differs by instruction set: the bf16 rounding
// (fold_momentum_bf16, cast_to_bf16).
//
// Each kernel runs fixed blocks of kBlock elements, split statically over the threads; a block
// runs V::kLanes elements per vector step and its last few elements through the scalar formula
// (optimizer_formulas.h). Every lane computes the scalar formula's operations in the scalar
// order, so the results equal the scalar loops bit for bit, whatever the thread count (the
// library builds with -ffp-contract=off, so no multiply-add becomes an FMA).
//
// Outputs that are only written (the triad's a, cast_to_bf16's y) use non-temporal stores when
// the array is large and aligned to a vector: a normal store first reads the line it writes
// (write-allocate), which costs a third more traffic on a triad. In-place outputs (m, w, v)
// were read a moment before, so they keep normal stores (measured: streaming them made adamw
// about half as fast and the fold no faster; docs/executor-numerics.md, "Host kernels").
//
// Everything here has internal linkage (an anonymous namespace, in a header only those two
// files include): each file compiles it with its own target flags, so the linker can never
// pick an AVX-512 copy of a shared inline function for the AVX2 path.
//
// V is Vec<256> (AVX2) or Vec<512> (AVX-512).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "muonplan/exec/bf16.h"
#include "muonplan/exec/optimizer_formulas.h"

namespace muonplan::exec::host {
namespace {

// The fp32 vector of kBits (256: AVX2, 512: AVX-512). GCC and Clang give __m256 and __m512 the
// arithmetic operators (+ - * / lane by lane, each rounded as written: no contraction under
// -ffp-contract=off), so the blocks below read as the scalar formulas do. The rest is each
// width's intrinsics; `if constexpr` drops the other width's, so each file compiles only the
// instructions its target flags have.
// The vector types of a width: fp32 lanes, 32-bit integer lanes, and half of it (kLanes bf16).
// Specializations, not std::conditional: GCC drops __m256's attributes from a template argument
// (and says so).
template <bool kWide>
struct VectorTypes {
  using F = __m256;
  using I = __m256i;
  using Half = __m128i;
};
template <>
struct VectorTypes<true> {
  using F = __m512;
  using I = __m512i;
  using Half = __m256i;
};

template <int kBits>
struct Vec {
  static_assert(kBits == 256 || kBits == 512);
  static constexpr bool kWide = kBits == 512;
  using F = typename VectorTypes<kWide>::F;
  using I = typename VectorTypes<kWide>::I;
  using Half = typename VectorTypes<kWide>::Half;
  static constexpr int64_t kLanes = kBits / 32;
  static constexpr uintptr_t kAlign = kBits / 8;  // bytes, for the non-temporal stores

  static F set1(float x) {
    if constexpr (kWide) {
      return _mm512_set1_ps(x);
    } else {
      return _mm256_set1_ps(x);
    }
  }
  static F load(const float* p) {
    if constexpr (kWide) {
      return _mm512_loadu_ps(p);
    } else {
      return _mm256_loadu_ps(p);
    }
  }
  // kLanes bf16 -> kLanes fp32, exact: each bf16 in the top half of its lane.
  static F widen(Half h) {
    if constexpr (kWide) {
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    } else {
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
  }
  static F load_bf16(const bf16* p) {
    if constexpr (kWide) {
      return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    } else {
      return widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
  }
  // to_bf16 (bf16.h) on every lane by its integer rule: the bf16 bits in each 32-bit lane's low
  // half. Round to nearest even by adding 0x7fff plus the kept part's lowest bit; a NaN keeps its
  // top bits with the quiet bit (0x0040) set.
  static I round_lanes(F x) {
    if constexpr (kWide) {
      const __m512i u = _mm512_castps_si512(x);
      const __m512i hi = _mm512_srli_epi32(u, 16);
      const __m512i bias =
          _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(hi, _mm512_set1_epi32(1)));
      const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
      const __mmask16 is_nan = _mm512_cmpgt_epu32_mask(
          _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
      return _mm512_mask_or_epi32(rounded, is_nan, hi, _mm512_set1_epi32(0x0040));
    } else {
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
  }
  template <bool kStream>
  static void store(float* p, F v) {
    if constexpr (kWide) {
      kStream ? _mm512_stream_ps(p, v) : _mm512_storeu_ps(p, v);
    } else {
      kStream ? _mm256_stream_ps(p, v) : _mm256_storeu_ps(p, v);
    }
  }
  static F sqrt(F a) {
    if constexpr (kWide) {
      return _mm512_sqrt_ps(a);
    } else {
      return _mm256_sqrt_ps(a);
    }
  }
};

constexpr int64_t kBlock = int64_t{1} << 14;        // elements per OpenMP block, a multiple of 64
constexpr int64_t kParallelMin = int64_t{1} << 16;  // below this, one thread (fork cost)
constexpr int64_t kStreamMin = int64_t{1} << 20;    // from here, write-only outputs bypass cache

// body(first, last) on each block [first, last) of n elements. Blocks start at multiples of
// kBlock, so the vector steps of an aligned array stay aligned in every block.
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

// for_blocks of a kernel whose output `out` is only written: body(first, last, kStream) with
// std::true_type where its stores bypass the cache (large and vector-aligned), else false_type.
template <class V, class Body>
void for_output_blocks(int64_t n, const void* out, const Body& body) {
  if (n >= kStreamMin && reinterpret_cast<uintptr_t>(out) % V::kAlign == 0) {
    for_blocks(n, true, [&](int64_t first, int64_t last) { body(first, last, std::true_type{}); });
  } else {
    for_blocks(n, false,
               [&](int64_t first, int64_t last) { body(first, last, std::false_type{}); });
  }
}

// End of the full vector steps of `width` elements in [first, last); the rest is the tail.
int64_t vector_end(int64_t first, int64_t last, int64_t width) {
  return first + (last - first) / width * width;
}

// The block functions take their arguments by value, so the pointers and constants stay in
// registers: a lambda's by-reference captures would be reloaded after every store, since a
// vector store may alias anything.

template <class V>
void fold_f32_block(int64_t first, int64_t last, float mu, float scale, const float* g, float* m) {
  const typename V::F vmu = V::set1(mu), vscale = V::set1(scale);
  const int64_t end = vector_end(first, last, V::kLanes);
  int64_t i = first;
  for (; i < end; i += V::kLanes) {
    V::template store<false>(m + i, vmu * V::load(m + i) + vscale * V::load(g + i));
  }
  for (; i < last; ++i) m[i] = formula::fold_f32(mu, m[i], scale * g[i]);
}

template <class V>
void add_update_block(int64_t first, int64_t last, float decay, const bf16* u, float* w) {
  const typename V::F vdecay = V::set1(decay);
  const int64_t end = vector_end(first, last, V::kLanes);
  int64_t i = first;
  for (; i < end; i += V::kLanes) {
    V::template store<false>(w + i, V::load(w + i) * vdecay + V::load_bf16(u + i));
  }
  for (; i < last; ++i) w[i] = formula::add_update(decay, u[i], w[i]);
}

template <class V>
void adamw_block(int64_t first, int64_t last, formula::AdamwConstants k, const float* g, float* w,
                 float* m, float* v) {
  using F = typename V::F;
  const F b1 = V::set1(k.beta1), b2 = V::set1(k.beta2), c1 = V::set1(k.c1), c2 = V::set1(k.c2);
  const F decay = V::set1(k.decay), step_size = V::set1(k.step_size);
  const F sqrt_bc2 = V::set1(k.sqrt_bc2), eps = V::set1(k.eps);
  const int64_t end = vector_end(first, last, V::kLanes);
  int64_t i = first;
  for (; i < end; i += V::kLanes) {
    const F gi = V::load(g + i);
    const F mi = b1 * V::load(m + i) + c1 * gi;
    const F vi = b2 * V::load(v + i) + c2 * gi * gi;
    const F denom = V::sqrt(vi) / sqrt_bc2 + eps;
    const F wi = V::load(w + i) * decay - step_size * (mi / denom);
    V::template store<false>(m + i, mi);
    V::template store<false>(v + i, vi);
    V::template store<false>(w + i, wi);
  }
  for (; i < last; ++i) formula::adamw(k, g[i], w[i], m[i], v[i]);
}

template <class V, bool kStream>
void triad_block(int64_t first, int64_t last, float q, const float* b, const float* c, float* a) {
  const typename V::F vq = V::set1(q);
  const int64_t end = vector_end(first, last, V::kLanes);
  int64_t i = first;
  for (; i < end; i += V::kLanes) {
    V::template store<kStream>(a + i, V::load(b + i) + vq * V::load(c + i));
  }
  for (; i < last; ++i) a[i] = formula::triad(q, b[i], c[i]);
}

// The kernels without bf16 rounding, whole: the same in every form of one vector width.
template <class V>
void fold_f32_kernel(int64_t n, float mu, float scale, const float* g, float* m) {
  for_blocks(n, false,
             [=](int64_t first, int64_t last) { fold_f32_block<V>(first, last, mu, scale, g, m); });
}
template <class V>
void add_update_kernel(int64_t n, float decay, const bf16* u, float* w) {
  for_blocks(n, false,
             [=](int64_t first, int64_t last) { add_update_block<V>(first, last, decay, u, w); });
}
template <class V>
void adamw_kernel(int64_t n, float lr, float beta1, float beta2, float eps, float wd, int64_t step,
                  const float* g, float* w, float* m, float* v) {
  const formula::AdamwConstants k = formula::adamw_constants(lr, beta1, beta2, eps, wd, step);
  for_blocks(n, false,
             [=](int64_t first, int64_t last) { adamw_block<V>(first, last, k, g, w, m, v); });
}
template <class V>
void triad_kernel(int64_t n, float q, const float* b, const float* c, float* a) {
  for_output_blocks<V>(n, a, [=](int64_t first, int64_t last, auto stream) {
    triad_block<V, decltype(stream)::value>(first, last, q, b, c, a);
  });
}

}  // namespace
}  // namespace muonplan::exec::host

// The entry points (host_kernels_isa.h) of those four kernels in a form's namespace, on vector V.
#define MUONPLAN_PLAIN_HOST_KERNELS(V)                                                         \
  void fold_momentum_f32(int64_t n, float mu, float scale, const float* g, float* m) {         \
    host::fold_f32_kernel<V>(n, mu, scale, g, m);                                              \
  }                                                                                            \
  void add_update_bf16(int64_t n, float decay, const bf16* u, float* w) {                      \
    host::add_update_kernel<V>(n, decay, u, w);                                                \
  }                                                                                            \
  void adamw(int64_t n, float lr, float beta1, float beta2, float eps, float wd, int64_t step, \
             const float* g, float* w, float* m, float* v) {                                   \
    host::adamw_kernel<V>(n, lr, beta1, beta2, eps, wd, step, g, w, m, v);                     \
  }                                                                                            \
  void triad(int64_t n, float q, const float* b, const float* c, float* a) {                   \
    host::triad_kernel<V>(n, q, b, c, a);                                                      \
  }
