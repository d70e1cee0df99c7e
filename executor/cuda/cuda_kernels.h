// The CUDA backend's kernels (cuda_kernels.cu, C++17, -fmad=false). Each launcher enqueues on
// `stream` and returns the launch error (cudaSuccess for empty work). The elementwise kernels
// call the CPU backend's formulas (optimizer_formulas.h; docs/executor-numerics.md, "bf16
// emulation rules").
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "muonplan/exec/bf16.h"
#include "muonplan/exec/optimizer_formulas.h"

namespace muonplan::exec::cuda {

// Sum of squares per matrix, in double, in an order fixed by `elems` alone (fixed chunks of a
// fixed number of threads, fixed reduction trees): the same bits on any device and launch.
// `partial` is scratch of sum_squares_partials(batch, elems) doubles.
int64_t sum_squares_partials(int64_t batch, int64_t elems);
cudaError_t sum_squares_bf16(int64_t batch, int64_t elems, const bf16* x, float* out,
                             double* partial, cudaStream_t stream);
// The same for one fp32 array of n elements into *out.
cudaError_t sum_squares_f32(int64_t n, const float* x, float* out, double* partial,
                            cudaStream_t stream);
// y = bf16(float(x) * scale[b]) for matrix b; y may alias x.
cudaError_t scale_bf16(int64_t batch, int64_t elems, const bf16* x, const float* scale, bf16* y,
                       cudaStream_t stream);
// y = bf16(float(x) * s), s a kernel argument; y may alias x.
cudaError_t scale_bf16_by(int64_t elems, float s, const bf16* x, bf16* y, cudaStream_t stream);
// scale[b] = fp32(1 / (norm_scale * sqrt(double(sum_sq[b])) + eps)), in double.
cudaError_t ns_scale(int64_t batch, const float* sum_sq, double norm_scale, double eps,
                     float* scale, cudaStream_t stream);
// y[b] = x[b]^T, x of [rows, cols].
cudaError_t transpose_bf16(int64_t batch, int64_t rows, int64_t cols, const bf16* x, bf16* y,
                           cudaStream_t stream);
cudaError_t cast_to_bf16(int64_t n, const float* x, bf16* y, cudaStream_t stream);
cudaError_t cast_to_f32(int64_t n, const bf16* x, float* y, cudaStream_t stream);
cudaError_t momentum_f32(int64_t n, float mu, bool nesterov, const float* g, float* m, bf16* u,
                         cudaStream_t stream);
cudaError_t momentum_bf16(int64_t n, float mu, bool nesterov, const float* g, bf16* m, bf16* u,
                          cudaStream_t stream);
cudaError_t apply_update(int64_t n, float decay, float s, const bf16* o, float* w,
                         cudaStream_t stream);
// AdamW with the constants of formula::adamw_constants, computed on the host.
cudaError_t adamw(int64_t n, const formula::AdamwConstants& k, const float* g, float* w, float* m,
                  float* v, cudaStream_t stream);

// C[b] = bf16(beta * float(C[b])), or 0 where beta == 0: a GEMM with k = 0. rows x cols, ld.
cudaError_t scale_matrix_bf16(int64_t batch, int64_t rows, int64_t cols, int64_t ld, int64_t stride,
                              float beta, bf16* c, cudaStream_t stream);
// C[b][i][j] = C[b][j][i] for every i > j: the lower triangle becomes the upper's mirror.
cudaError_t mirror_upper_bf16(int64_t batch, int64_t n, int64_t ld, int64_t stride, bf16* c,
                              cudaStream_t stream);

// Pointer arrays of one group of syrk blocks: block (I, J) of matrix b is the GEMM
// C[b][I, J] = alpha A[b][I, :] A[b][J, :]^T + beta C[b][I, J], with row blocks of `tile` rows.
// Group 0: I <= J < full (full = n / tile); group 1: I < full, J = full (the partial last
// column of blocks); group 2: I = J = full (the corner). `per_matrix` blocks of each matrix,
// batch * per_matrix entries in each array.
enum class SyrkGroup { full = 0, edge = 1, corner = 2 };
cudaError_t syrk_block_pointers(SyrkGroup group, int64_t batch, int64_t per_matrix, int64_t full,
                                int64_t tile, const bf16* a, int64_t lda, int64_t stride_a, bf16* c,
                                int64_t ldc, int64_t stride_c, const void** a_rows,
                                const void** a_cols, void** c_blocks, cudaStream_t stream);

}  // namespace muonplan::exec::cuda
