// The bf16 GEMM of the CPU backend's fast path: oneDNN matmul, bf16 operands, fp32 accumulation
// (AMX or AVX512_BF16 where the CPU has them, oneDNN's own kernels where it does not), and the
// step's one bf16 rounding of alpha * AB + beta * C (docs/executor-numerics.md, "GEMM paths").
//
// Like the OpenBLAS oracle, the work is split into one task per (matrix, row block of C), with
// blocks a function of the shape alone, and every oneDNN call runs on one thread: the bits do
// not depend on the thread count, so sharded runs equal one-rank runs on this path too.
#pragma once

#include <cstdint>
#include <memory>

#include "muonplan/exec/backend.h"

namespace muonplan::exec::cpu {

class OnednnGemm {
 public:
  // nullptr where oneDNN has no bf16 matmul on this CPU (no AVX-512 by CPUID: the backend then
  // runs the OpenBLAS path). Creates no primitive yet (the first costs oneDNN's setup).
  static std::unique_ptr<OnednnGemm> create();
  ~OnednnGemm();

  // KernelTable::gemm_bf16's contract: batch, m, n >= 1, arguments checked, k may be 0.
  void run(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
           const MatrixBatch& a, const MatrixBatch& b, float beta, const MatrixBatch& c);

  // What oneDNN runs for a GEMM of this shape (its implementation name, e.g.
  // "brg:avx512_core_amx_bf16"), for the benchmarks' reports.
  std::string implementation(int64_t m, int64_t n, int64_t k);

  struct Impl;

 private:
  explicit OnednnGemm(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace muonplan::exec::cpu
