// Kernels: the step's arithmetic on backend memory, one table per backend (docs/architecture.md,
// "Boundaries"). Backend (backend.h) owns memory and lanes and runs every kernel call through
// one place, Backend::launch(), so a wrapper (cpu-async's lanes, the step's timing) handles all
// kernels by overriding that one method instead of re-declaring each kernel.
//
// Pointers are backend memory (alloc()); sizes are valid: Backend checks the GEMM arguments
// before a call reaches the table.
#pragma once

#include <cstdint>
#include <functional>

#include "muonplan/exec/bf16.h"

namespace muonplan::exec {

class Backend;

// One strided batch of row-major matrices: element (b, i, j) at ptr[b*stride + i*ld + j].
struct MatrixBatch {
  void* ptr = nullptr;
  int64_t rows = 0, cols = 0, ld = 0, stride = 0;
};

class Kernels {
 public:
  // `memory`: the backend whose memory the defaults below go through.
  explicit Kernels(Backend& memory) : memory_(memory) {}
  virtual ~Kernels() = default;
  Kernels(const Kernels&) = delete;
  Kernels& operator=(const Kernels&) = delete;

  // --- bf16 GEMM, fp32 accumulation, one rounding of each output element:
  // C[b] = bf16(alpha * op(A[b]) op(B[b]) + beta * C[b]), op = transpose when trans_*.
  // A, B, C hold bf16. Shapes are of op(A): m x k, op(B): k x n, C: m x n; a, b, c describe the
  // stored matrices (a.rows x a.cols is k x m when trans_a). Called with batch, m, n >= 1 and
  // every matrix as described (Backend::gemm_bf16's checks); k may be 0 (C = bf16(beta * C)).
  // C does not overlap A or B; A and B may be the same matrices (X X^T). With beta == 0, C is
  // not read.
  virtual void run_gemm_bf16(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n,
                             int64_t k, float alpha, const MatrixBatch& a, const MatrixBatch& b,
                             float beta, const MatrixBatch& c) = 0;
  // --- symmetric rank-k update, for symmetric Newton-Schulz (docs/muon-step.md section 3):
  // C[b] = bf16(alpha * A[b] A[b]^T + beta * C[b]), fp32 accumulation, one rounding, for a batch
  // of row-major A[b] of n x k (a.rows = n, a.cols = k) and C[b] of n x n. Every element of C is
  // written. With beta != 0, C is symmetric on entry (NS passes B := A); with beta == 0 it is
  // not read. The default calls run_gemm_bf16(trans_b, A, A): the GEMM's bits, not faster. A
  // table may instead compute only the blocks on and above the diagonal and mirror them (about
  // half the FLOPs for k >> n); C is then exactly symmetric.
  virtual void run_syrk_bf16(int64_t batch, int64_t n, int64_t k, float alpha, const MatrixBatch& a,
                             float beta, const MatrixBatch& c);

  // --- elementwise (n elements; fp32 unless the name says bf16)
  // Per matrix b of a batch: out[b] = sum of squares of x[b], accumulated in a fixed order
  // (the result must not depend on threads: the step is bit-exact across world sizes).
  virtual void sum_squares_bf16(int64_t batch, int64_t elems, const bf16* x, float* out) = 0;
  // *out = sum of squares of the fp32 x (n elements), accumulated in double in a fixed order;
  // the step's check that AdamW left every weight finite (docs/reliability.md).
  virtual void sum_squares_f32(int64_t n, const float* x, float* out) = 0;
  // y = bf16(x * scale[b]) for matrix b (elems per matrix); y may alias x.
  virtual void scale_bf16(int64_t batch, int64_t elems, const bf16* x, const float* scale,
                          bf16* y) = 0;
  // y = bf16(x * s) for one host scalar s (no device memory holds s: on CUDA it is a kernel
  // argument, so there is no copy from pageable host memory, which would stall the lane). The
  // default goes through a one-float buffer and scale_bf16, so it has scale_bf16's bits.
  virtual void scale_bf16_by(int64_t elems, float s, const bf16* x, bf16* y);
  // NS normalization factor: scale[b] = fp32(1 / (norm_scale * sqrt(sum_sq[b]) + eps)), computed
  // in double and rounded once. sum_sq and scale are backend memory. The default goes through
  // host memory (copy, compute, copy back); a device table overrides it to avoid the sync.
  virtual void ns_scale(int64_t batch, const float* sum_sq, double norm_scale, double eps,
                        float* scale);
  // y[b] = x[b]^T, exact: x holds [rows, cols] matrices, y gets [cols, rows]; y does not overlap
  // x. The default goes through host memory; tables override it.
  virtual void transpose_bf16(int64_t batch, int64_t rows, int64_t cols, const bf16* x, bf16* y);
  virtual void cast_to_bf16(int64_t n, const float* x, bf16* y) = 0;
  virtual void cast_to_f32(int64_t n, const bf16* x, float* y) = 0;
  // Momentum fold, M = mu * M + G (M fp32; or bf16, with G rounded to bf16 first and the fold
  // rounded to bf16), and the NS input u = bf16(nesterov ? mu * M + G : M).
  virtual void momentum_f32(int64_t n, float mu, bool nesterov, const float* g, float* m,
                            bf16* u) = 0;
  virtual void momentum_bf16(int64_t n, float mu, bool nesterov, const float* g, bf16* m,
                             bf16* u) = 0;
  // W = W * (1 - lr * wd) - s * O  (O bf16: the orthogonalized update).
  virtual void apply_update(int64_t n, float decay, float s, const bf16* o, float* w) = 0;
  // Decoupled AdamW with bias correction; m, v fp32 (dion's `momentum`, `variance`); step >= 1.
  // Per element, in fp32 with each operation rounded as written:
  //   m = beta1 * m + (1 - beta1) * g;   v = beta2 * v + (1 - beta2) * g * g
  //   w = w * (1 - lr * wd) - step_size * (m / (sqrt(v) / sqrt_bc2 + eps))
  // with step_size = fp32(lr / (1 - beta1^step)) and sqrt_bc2 = fp32(sqrt(1 - beta2^step)),
  // both computed in double.
  virtual void adamw(int64_t n, float lr, float beta1, float beta2, float eps, float wd,
                     int64_t step, const float* g, float* w, float* m, float* v) = 0;

 private:
  Backend& memory_;
};

// One kernel call with its arguments bound, as Backend::launch() receives it: run it on a table.
using KernelCall = std::function<void(Kernels&)>;

}  // namespace muonplan::exec
