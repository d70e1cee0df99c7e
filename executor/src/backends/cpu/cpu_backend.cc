// The CPU reference backend: exact bf16 emulation (docs/executor-numerics.md).
//
// Every stored bf16 is rounded once, to nearest even. A GEMM runs on one of two paths ("GEMM
// paths"): oneDNN's bf16 matmul (cpu_gemm_onednn.cc, the default), or the oracle here, which
// converts the bf16 operands to fp32 (exact), runs OpenBLAS sgemm with alpha and beta folded
// in, and rounds the fp32 result to bf16 once. Nothing depends on the number of threads: each
// GEMM call runs single-threaded on row blocks whose size is a function of the shape alone,
// elementwise kernels compute each element on its own, and reductions sum fixed blocks combined
// in index order.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "backends/cpu/cpu_gemm_onednn.h"
#include "backends/cpu/cpu_kernels.h"
#include "muonplan/exec/backend.h"
#include "muonplan/exec/openblas_core.h"
#include "muonplan/exec/optimizer_formulas.h"

namespace muonplan::exec {
namespace {

constexpr int64_t kAlign = 64;                        // bytes: allocations and scratch regions
constexpr int64_t kSumBlock = 4096;                   // elements per partial sum of sum_squares
constexpr int64_t kConvertChunk = 1 << 16;            // elements per task of the casts
constexpr int64_t kScratchFloats = int64_t{1} << 25;  // fp32 GEMM scratch per group: 128 MiB

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
int64_t round_up(int64_t a, int64_t b) {
  return ceil_div(a, b) * b;
}

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

void* aligned_zeroed(size_t bytes) {
  const size_t padded = round_up(std::max<int64_t>(static_cast<int64_t>(bytes), 1), kAlign);
  void* p = std::aligned_alloc(kAlign, padded);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, padded);
  return p;
}

const bf16* row_of(const MatrixBatch& x, int64_t b, int64_t i) {
  return static_cast<const bf16*>(x.ptr) + b * x.stride + i * x.ld;
}

// One caller at a time, as the Backend contract orders calls (the GEMM scratch is shared);
// alloc, free and memory may also be called from other threads. Its kernel table (table()) sets
// every entry but syrk_bf16 and scale_bf16_by, whose defaults (the GEMM; scale_bf16 through a
// one-float buffer) are what it would run anyway.
class CpuBackend final : public Backend {
 public:
  CpuBackend(CpuGemm gemm, int64_t onednn_min_macs)
      : Backend(table()), onednn_min_macs_(onednn_min_macs) {
    // Links libmuonplan_openblas_core.so, whose constructor picks OpenBLAS's kernel, into every
    // program with a CPU backend (a library nothing calls may be left out of the link).
    (void)openblas_core_origin();
    openblas_set_num_threads(1);
    cpu::reserve_openblas_buffers(gemm == CpuGemm::onednn);
    if (gemm == CpuGemm::onednn) onednn_ = cpu::OnednnGemm::create();
  }
  ~CpuBackend() override {
    for (void* ptr : counted(MemoryKind::device).live()) std::free(ptr);
  }

  CpuGemm gemm() const { return onednn_ ? CpuGemm::onednn : CpuGemm::openblas; }
  BackendInfo describe() const override {
    return {"cpu", true, {cpu_gemm_name(gemm()), openblas_core_name()}};
  }

  void* alloc(size_t bytes, MemoryKind kind) override {
    if (kind == MemoryKind::pinned_host) return alloc_pageable(bytes);
    void* p = aligned_zeroed(bytes);
    counted(kind).add(p, bytes);
    return p;
  }

  void free(void* ptr, MemoryKind kind) override {
    if (ptr == nullptr) return;
    if (kind == MemoryKind::pinned_host) return free_pageable(ptr);
    if (!counted(kind).remove(ptr)) {
      throw std::invalid_argument("cpu backend: free() of a pointer alloc() did not return");
    }
    std::free(ptr);
  }

  // Every direction is a memory copy: the CPU backend's memory is host memory.
  void copy(void* dst, const void* src, size_t bytes, Copy /*direction*/) override {
    const auto d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
    if (d < s + bytes && s < d + bytes) {  // overlapping: one memmove, in order
      std::memmove(dst, src, bytes);
      return;
    }
    constexpr int64_t kChunk = int64_t{1} << 20;
    const int64_t chunks = ceil_div(static_cast<int64_t>(bytes), kChunk);
#pragma omp parallel for schedule(static) if (chunks > 1)
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t off = c * kChunk;
      std::memcpy(static_cast<char*>(dst) + off, static_cast<const char*>(src) + off,
                  std::min<int64_t>(kChunk, bytes - off));
    }
  }

 private:
  // --- the kernel table (kernels.h), reached through launch(); each entry is `self`'s member.
  static CpuBackend& cpu(Backend& self) {
    return static_cast<CpuBackend&>(self);
  }
  static KernelTable table() {
    KernelTable t;
    t.gemm_bf16 = [](Backend& self, int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n,
                     int64_t k, float alpha, const MatrixBatch& a, const MatrixBatch& b, float beta,
                     const MatrixBatch& c) {
      cpu(self).gemm_bf16_on_path(batch, trans_a, trans_b, m, n, k, alpha, a, b, beta, c);
    };
    t.sum_squares = [](Backend&, int64_t batch, int64_t elems, DType type, const void* x,
                       float* out) {
      if (type == DType::bf16) {
        sum_squares_blocks(batch, elems, static_cast<const bf16*>(x), out);
      } else {
        sum_squares_blocks(batch, elems, static_cast<const float*>(x), out);
      }
    };
    t.scale_bf16 = [](Backend&, int64_t batch, int64_t elems, const bf16* x, const float* scale,
                      bf16* y) { scale_bf16_each(batch, elems, x, scale, y); };
    t.elementwise = [](Backend&, const Elementwise& op) {
      std::visit([](const auto& k) { run(k); }, op);
    };
    t.ns_scale = [](Backend&, int64_t batch, const float* sum_sq, double norm_scale, double eps,
                    float* scale) {
      for (int64_t mat = 0; mat < batch; ++mat) {
        scale[mat] = formula::ns_scale(norm_scale, eps, sum_sq[mat]);
      }
    };
    t.transpose_bf16 = [](Backend&, int64_t batch, int64_t rows, int64_t cols, const bf16* x,
                          bf16* y) { transpose_blocks(batch, rows, cols, x, y); };
    return t;
  }

  void gemm_bf16_on_path(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                         float alpha, const MatrixBatch& a, const MatrixBatch& b, float beta,
                         const MatrixBatch& c) {
    // Small GEMMs stay on OpenBLAS: a oneDNN primitive costs 0.2-9 ms to create, once per shape
    // and coefficients in each process, more than such a GEMM's whole run (a function of the
    // shape, so the bits still depend on nothing else).
    if (onednn_ && m * n * k >= onednn_min_macs_) {
      onednn_->run(batch, trans_a, trans_b, m, n, k, alpha, a, b, beta, c);
    } else {
      run_gemm_openblas(batch, trans_a, trans_b, m, n, k, alpha, a, b, beta, c);
    }
  }

  // out[b] = the sum of squares of matrix b: fixed blocks of kSumBlock elements, each summed in
  // double, combined in index order (bf16 and fp32 alike; the fp32 sum is a batch of one).
  template <typename T>
  static void sum_squares_blocks(int64_t batch, int64_t elems, const T* x, float* out) {
    const int64_t blocks = std::max<int64_t>(1, ceil_div(elems, kSumBlock));
    std::vector<double> partial(batch * blocks);
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < batch * blocks; ++t) {
      const int64_t mat = t / blocks, first = (t % blocks) * kSumBlock;
      partial[t] = cpu::sum_squares(x + mat * elems + first,
                                    std::max<int64_t>(0, std::min(kSumBlock, elems - first)));
    }
    for (int64_t mat = 0; mat < batch; ++mat) {
      double s = 0;
      for (int64_t j = 0; j < blocks; ++j) s += partial[mat * blocks + j];
      out[mat] = static_cast<float>(s);
    }
  }

  static void scale_bf16_each(int64_t batch, int64_t elems, const bf16* x, const float* scale,
                              bf16* y) {
#pragma omp parallel
    for (int64_t mat = 0; mat < batch; ++mat) {
      const float s = scale[mat];
      const bf16* xm = x + mat * elems;
      bf16* ym = y + mat * elems;
#pragma omp for simd schedule(static) nowait
      for (int64_t i = 0; i < elems; ++i) ym[i] = formula::scale_bf16(xm[i], s);
    }
  }

  static void transpose_blocks(int64_t batch, int64_t rows, int64_t cols, const bf16* x, bf16* y) {
    constexpr int64_t kRows = 64;
    const int64_t blocks = ceil_div(rows, kRows);
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < batch * blocks; ++t) {
      const int64_t mat = t / blocks, i0 = (t % blocks) * kRows;
      cpu::transpose(x + mat * rows * cols + i0 * cols, std::min(kRows, rows - i0), cols, cols,
                     y + mat * rows * cols + i0, rows);
    }
  }

  // --- the elementwise kernels (KernelTable::elementwise), one per operation
  static void run(const CastToBf16& k) {
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < ceil_div(k.n, kConvertChunk); ++c) {
      const int64_t off = c * kConvertChunk;
      cpu::f32_to_bf16(k.x + off, k.y + off, std::min(kConvertChunk, k.n - off));
    }
  }

  static void run(const CastToF32& k) {
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < ceil_div(k.n, kConvertChunk); ++c) {
      const int64_t off = c * kConvertChunk;
      cpu::bf16_to_f32(k.x + off, k.y + off, std::min(kConvertChunk, k.n - off));
    }
  }

  static void run(const MomentumF32& k) {
    const float mu = k.mu;
    const bool nesterov = k.nesterov;
    const float* g = k.g;
    float* m = k.m;
    bf16* u = k.u;
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < k.n; ++i) u[i] = formula::momentum_f32(mu, nesterov, g[i], m[i]);
  }

  static void run(const MomentumBf16& k) {
    const float mu = k.mu;
    const bool nesterov = k.nesterov;
    const float* g = k.g;
    bf16* m = k.m;
    bf16* u = k.u;
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < k.n; ++i) u[i] = formula::momentum_bf16(mu, nesterov, g[i], m[i]);
  }

  static void run(const ApplyUpdate& k) {
    const float decay = k.decay, s = k.s;
    const bf16* o = k.o;
    float* w = k.w;
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < k.n; ++i) w[i] = formula::apply_update(decay, s, o[i], w[i]);
  }

  static void run(const Adamw& a) {
    const formula::AdamwConstants k =
        formula::adamw_constants(a.lr, a.beta1, a.beta2, a.eps, a.wd, a.step);
    const float* g = a.g;
    float *w = a.w, *m = a.m, *v = a.v;
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < a.n; ++i) formula::adamw(k, g[i], w[i], m[i], v[i]);
  }

 private:
  void run_gemm_openblas(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                         float alpha, const MatrixBatch& a, const MatrixBatch& b, float beta,
                         const MatrixBatch& c);

  float* scratch(int64_t floats) {
    if (floats > scratch_floats_) {
      scratch_.reset(static_cast<float*>(aligned_zeroed(floats * sizeof(float))));
      scratch_floats_ = floats;
    }
    return scratch_.get();
  }

  // fp32 copies of GEMM operands: backend-internal, not counted in memory().
  std::unique_ptr<float, FreeDeleter> scratch_;
  int64_t scratch_floats_ = 0;
  std::unique_ptr<cpu::OnednnGemm> onednn_;  // null: the OpenBLAS path
  int64_t onednn_min_macs_;                  // smaller GEMMs (m n k) run on OpenBLAS
};

// The oracle: fp32 copies of the operands, OpenBLAS sgemm. Arguments checked by
// Backend::gemm_bf16.
void CpuBackend::run_gemm_openblas(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n,
                                   int64_t k, float alpha, const MatrixBatch& a,
                                   const MatrixBatch& b, float beta, const MatrixBatch& c) {
  // Stored shapes: op(A) is m x k, so A is k x m when transposed.
  const int64_t ar = trans_a ? k : m, ac = trans_a ? m : k;
  const int64_t br = trans_b ? n : k, bc = trans_b ? k : n;
  const bool same_ab =
      a.ptr == b.ptr && a.ld == b.ld && a.stride == b.stride && ar == br && ac == bc;
  // Per-matrix fp32 regions, each starting on a 64-byte boundary so every matrix of a batch
  // sits alike in memory.
  const int64_t fa = round_up(ar * ac, kAlign / 4),
                fb = same_ab ? 0 : round_up(br * bc, kAlign / 4);
  const int64_t fc = round_up(m * n, kAlign / 4);
  const int64_t group = std::clamp<int64_t>(kScratchFloats / (fa + fb + fc), 1, batch);
  float* const sa = scratch(group * (fa + fb + fc));
  float* const sb = same_ab ? sa : sa + group * fa;
  float* const sc = sa + group * (fa + fb);
  const int64_t ldb = same_ab ? ac : bc;
  const int64_t row_block = cpu::gemm_row_block(m), blocks = ceil_div(m, row_block);
  const bool read_c = beta != 0.0f;

  // A is converted whole up front when every block reads all of it (X X^T reads A as B, and a
  // transposed A's row block is a column slice); otherwise each block converts its own rows.
  const bool a_whole = same_ab || trans_a;
  for (int64_t g0 = 0; g0 < batch; g0 += group) {
    const int64_t gn = std::min(group, batch - g0);
#pragma omp parallel
    {
      if (k > 0 && a_whole) {
#pragma omp for schedule(static) nowait
        for (int64_t r = 0; r < gn * ar; ++r) {
          cpu::bf16_to_f32(row_of(a, g0 + r / ar, r % ar), sa + (r / ar) * fa + (r % ar) * ac, ac);
        }
      }
      if (k > 0 && !same_ab) {
#pragma omp for schedule(static) nowait
        for (int64_t r = 0; r < gn * br; ++r) {
          cpu::bf16_to_f32(row_of(b, g0 + r / br, r % br), sb + (r / br) * fb + (r % br) * bc, bc);
        }
      }
#pragma omp barrier
      // One task per (matrix, row block): convert its rows of A and C, sgemm, round C back to
      // bf16, all while the block is in cache. Which thread runs a task does not change its bits.
#pragma omp for schedule(dynamic, 1)
      for (int64_t t = 0; t < gn * blocks; ++t) {
        const int64_t mat = t / blocks, i0 = (t % blocks) * row_block;
        const int64_t rows = std::min(row_block, m - i0);
        float* cm = sc + mat * fc + i0 * n;
        if (read_c) {
          for (int64_t i = 0; i < rows; ++i) {
            cpu::bf16_to_f32(row_of(c, g0 + mat, i0 + i), cm + i * n, n);
          }
        }
        if (k == 0) {  // sgemm's argument checks reject k = 0 with row-major lda = k
          for (int64_t i = 0; i < rows * n; ++i) cm[i] = read_c ? beta * cm[i] : 0.0f;
        } else {
          float* am = sa + mat * fa + (trans_a ? i0 : i0 * ac);
          if (!a_whole) {
            for (int64_t i = 0; i < rows; ++i) {
              cpu::bf16_to_f32(row_of(a, g0 + mat, i0 + i), am + i * ac, ac);
            }
          }
          const float* bm = sb + mat * (same_ab ? fa : fb);
          cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                      trans_b ? CblasTrans : CblasNoTrans, rows, n, k, alpha, am, ac, bm, ldb,
                      read_c ? beta : 0.0f, cm, n);
        }
        for (int64_t i = 0; i < rows; ++i) {
          bf16* out = static_cast<bf16*>(c.ptr) + (g0 + mat) * c.stride + (i0 + i) * c.ld;
          cpu::f32_to_bf16(cm + i * n, out, n);
        }
      }
    }
  }
}

}  // namespace

CpuGemm default_cpu_gemm() {
  const char* env = std::getenv("MUONPLAN_CPU_GEMM");
  if (env == nullptr || *env == '\0') return CpuGemm::onednn;
  const std::string v = env;
  if (v == "onednn") return CpuGemm::onednn;
  if (v == "openblas") return CpuGemm::openblas;
  throw std::invalid_argument("MUONPLAN_CPU_GEMM: '" + v + "' is not onednn or openblas");
}

std::unique_ptr<Backend> make_cpu_backend(CpuGemm gemm, int64_t onednn_min_macs) {
  return std::make_unique<CpuBackend>(gemm, onednn_min_macs);
}

std::unique_ptr<Backend> make_cpu_backend() {
  return make_cpu_backend(default_cpu_gemm(), kOnednnMinMacs);
}

CpuGemm cpu_gemm_path(const Backend& backend) {
  const auto* cpu = dynamic_cast<const CpuBackend*>(&backend);
  if (cpu == nullptr) throw std::invalid_argument("cpu_gemm_path: not the cpu backend");
  return cpu->gemm();
}

const char* cpu_gemm_name(CpuGemm gemm) {
  return gemm == CpuGemm::onednn ? "onednn" : "openblas";
}

}  // namespace muonplan::exec
