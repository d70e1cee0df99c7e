// The kernel table: the step's arithmetic on backend memory, as ggml-backend's interface is a
// struct of function pointers (docs/architecture.md, "Boundaries"). A backend hands its table to
// Backend's constructor (backend.h); the entries it leaves null get the defaults below. Every
// kernel call reaches the table through one place, Backend::launch(), so a wrapper (cpu-async's
// lanes, the step's timing) handles all kernels by overriding that one function.
//
// Each entry takes the backend whose table it is (`self`: the entry casts it to its own class)
// and pointers to that backend's memory (alloc()); sizes are valid: Backend checks the GEMM
// arguments before a call reaches the table.
#pragma once

#include <cstdint>
#include <functional>
#include <variant>

#include "muonplan/exec/bf16.h"

namespace muonplan::exec {

class Backend;

// One strided batch of row-major matrices: element (b, i, j) at ptr[b*stride + i*ld + j].
struct MatrixBatch {
  void* ptr = nullptr;
  int64_t rows = 0, cols = 0, ld = 0, stride = 0;
};

// The element type of an entry that takes either.
enum class DType { f32, bf16 };

// --- the elementwise kernels of the optimizer, one entry keyed by the operation's struct
// (KernelTable::elementwise): each runs n independent elements, fp32 unless the name says bf16.
// y = bf16(x) / y = float(x).
struct CastToBf16 {
  int64_t n;
  const float* x;
  bf16* y;
};
struct CastToF32 {
  int64_t n;
  const bf16* x;
  float* y;
};
// Momentum fold, M = mu * M + G (M fp32; or bf16, with G rounded to bf16 first and the fold
// rounded to bf16), and the NS input u = bf16(nesterov ? mu * M + G : M).
struct MomentumF32 {
  int64_t n;
  float mu;
  bool nesterov;
  const float* g;
  float* m;
  bf16* u;
};
struct MomentumBf16 {
  int64_t n;
  float mu;
  bool nesterov;
  const float* g;
  bf16* m;
  bf16* u;
};
// W = W * (1 - lr * wd) - s * O  (O bf16: the orthogonalized update; decay = 1 - lr * wd).
struct ApplyUpdate {
  int64_t n;
  float decay, s;
  const bf16* o;
  float* w;
};
// Decoupled AdamW with bias correction; m, v fp32 (dion's `momentum`, `variance`); step >= 1.
// Per element, in fp32 with each operation rounded as written:
//   m = beta1 * m + (1 - beta1) * g;   v = beta2 * v + (1 - beta2) * g * g
//   w = w * (1 - lr * wd) - step_size * (m / (sqrt(v) / sqrt_bc2 + eps))
// with step_size = fp32(lr / (1 - beta1^step)) and sqrt_bc2 = fp32(sqrt(1 - beta2^step)),
// both computed in double.
struct Adamw {
  int64_t n;
  float lr, beta1, beta2, eps, wd;
  int64_t step;
  const float* g;
  float *w, *m, *v;
};
using Elementwise =
    std::variant<CastToBf16, CastToF32, MomentumF32, MomentumBf16, ApplyUpdate, Adamw>;

struct KernelTable {
  // --- required: Backend's constructor throws std::logic_error when one is null.
  //
  // bf16 GEMM, fp32 accumulation, one rounding of each output element:
  // C[b] = bf16(alpha * op(A[b]) op(B[b]) + beta * C[b]), op = transpose when trans_*.
  // A, B, C hold bf16. Shapes are of op(A): m x k, op(B): k x n, C: m x n; a, b, c describe the
  // stored matrices (a.rows x a.cols is k x m when trans_a). Called with batch, m, n >= 1 and
  // every matrix as described (Backend::gemm_bf16's checks); k may be 0 (C = bf16(beta * C)).
  // C does not overlap A or B; A and B may be the same matrices (X X^T). With beta == 0, C is
  // not read.
  void (*gemm_bf16)(Backend& self, int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n,
                    int64_t k, float alpha, const MatrixBatch& a, const MatrixBatch& b, float beta,
                    const MatrixBatch& c) = nullptr;
  // Per matrix b of a batch: out[b] = sum of squares of x[b] (elems each, of `type`),
  // accumulated in double in a fixed order (the result must not depend on threads: the step is
  // bit-exact across world sizes). bf16: the NS norm; f32 (batch 1): the step's check that
  // AdamW left every weight finite (docs/reliability.md).
  void (*sum_squares)(Backend& self, int64_t batch, int64_t elems, DType type, const void* x,
                      float* out) = nullptr;
  // y = bf16(x * scale[b]) for matrix b (elems per matrix); scale is backend memory; y may
  // alias x.
  void (*scale_bf16)(Backend& self, int64_t batch, int64_t elems, const bf16* x, const float* scale,
                     bf16* y) = nullptr;
  // The optimizer's elementwise kernels (the structs above).
  void (*elementwise)(Backend& self, const Elementwise& op) = nullptr;

  // --- optional: a null entry gets the default named.
  //
  // Symmetric rank-k update, for symmetric Newton-Schulz (docs/muon-step.md section 3):
  // C[b] = bf16(alpha * A[b] A[b]^T + beta * C[b]), fp32 accumulation, one rounding, for a batch
  // of row-major A[b] of n x k (a.rows = n, a.cols = k) and C[b] of n x n. Every element of C is
  // written. With beta != 0, C is symmetric on entry (NS passes B := A); with beta == 0 it is
  // not read. Default: gemm_bf16(trans_b, A, A), the GEMM's bits, not faster. A table may
  // instead compute only the blocks on and above the diagonal and mirror them (about half the
  // FLOPs for k >> n); C is then exactly symmetric.
  void (*syrk_bf16)(Backend& self, int64_t batch, int64_t n, int64_t k, float alpha,
                    const MatrixBatch& a, float beta, const MatrixBatch& c) = nullptr;
  // y = bf16(x * s) for one host scalar s (no device memory holds s: on CUDA it is a kernel
  // argument, so there is no copy from pageable host memory, which would stall the lane).
  // Default: a one-float buffer and scale_bf16, so it has scale_bf16's bits.
  void (*scale_bf16_by)(Backend& self, int64_t elems, float s, const bf16* x, bf16* y) = nullptr;
  // NS normalization factor: scale[b] = fp32(1 / (norm_scale * sqrt(sum_sq[b]) + eps)), computed
  // in double and rounded once. sum_sq and scale are backend memory. Default: through host
  // memory (copy, compute, copy back); a device table sets it to avoid the sync.
  void (*ns_scale)(Backend& self, int64_t batch, const float* sum_sq, double norm_scale, double eps,
                   float* scale) = nullptr;
  // y[b] = x[b]^T, exact: x holds [rows, cols] matrices, y gets [cols, rows]; y does not overlap
  // x. Default: through host memory.
  void (*transpose_bf16)(Backend& self, int64_t batch, int64_t rows, int64_t cols, const bf16* x,
                         bf16* y) = nullptr;
};

// Entries of the table, counted for the interface's bound (backend.h): every member is one
// function pointer.
constexpr int kKernelTableEntries = 8;
static_assert(sizeof(KernelTable) == kKernelTableEntries * sizeof(void (*)()),
              "KernelTable: kKernelTableEntries is not its number of entries");

// `table` with its null optional entries set to the defaults above; throws std::logic_error
// naming a required entry that is null.
KernelTable with_defaults(KernelTable table);

// One kernel call with its arguments bound, as Backend::launch() receives it: run it on `table`
// with `self` the backend the table belongs to.
using KernelCall = std::function<void(const KernelTable& table, Backend& self)>;

}  // namespace muonplan::exec
