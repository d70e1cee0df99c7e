// Single-threaded building blocks of the CPU backend (cpu_kernels.cc, built with AVX2). The
// backend splits work into fixed pieces and runs these on each piece, so no result depends on
// the number of threads.
#pragma once

#include <algorithm>
#include <cstdint>

#include "muonplan/exec/bf16.h"

namespace muonplan::exec::cpu {

// Rows of C per sgemm call on the OpenBLAS path. A function of m alone (never of the thread count
// or the batch), so the same shape always runs the same calls and gets the same bits. Blocks of
// 128-256 rows keep sgemm near its peak (64-row blocks lose about 12% on m = 256); two blocks
// per matrix keep two cores busy on a single matrix (an owner usually orthogonalizes one).
inline int64_t gemm_row_block(int64_t m) {
  const int64_t half = (m + 1) / 2;
  return std::clamp<int64_t>((half + 15) / 16 * 16, 64, 256);
}
// The oneDNN path's: the same rule up to 1024 rows. AMX calls gain from taller blocks (each
// reads all of B; measured on 2048^3 with B packed once: 1024-row blocks 30-40% faster than
// 256-row ones), and two blocks per matrix still keep two cores busy.
inline int64_t onednn_row_block(int64_t m) {
  const int64_t half = (m + 1) / 2;
  return std::clamp<int64_t>((half + 15) / 16 * 16, 64, 1024);
}

// y[i] = float(x[i]), n elements.
void bf16_to_f32(const bf16* x, float* y, int64_t n);
// y[i] = to_bf16(x[i]), n elements.
void f32_to_bf16(const float* x, bf16* y, int64_t n);
// Sum of x[i]^2 in double (each square is exact), in an order fixed by n alone: eight lanes
// (lane j takes i = j mod 8 up to the last multiple of 8), combined pairwise, then the tail.
double sum_squares(const bf16* x, int64_t n);
// Sum of x[i]^2 in double, in index order.
double sum_squares(const float* x, int64_t n);
// y = x^T for one [rows, cols] matrix with leading dimensions ldx, ldy.
void transpose(const bf16* x, int64_t rows, int64_t cols, int64_t ldx, bf16* y, int64_t ldy);

// Takes OpenBLAS's per-thread GEMM buffers on every OpenMP thread now (openblas_buffers.cc), so
// a failed allocation is an error here, not a hang inside the first GEMM; throws
// std::runtime_error when an address-space cap leaves no room for them (or, with `onednn`, for
// what oneDNN maps as it creates its primitives, which it does not check).
void reserve_openblas_buffers(bool onednn);

}  // namespace muonplan::exec::cpu
