// The device memory one Newton-Schulz call needs (docs/muon-step.md section 3): for `batch`
// matrices [rows, cols], m = min, n = max: X and the next X (bf16, m x n each), A and B (bf16,
// m x m each), and two floats per matrix (sum of squares and scale), every region 256-byte
// aligned (cuBLAS and AVX loads like aligned operands). One definition: the executor lays its
// workspace out by it, the cost model counts it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace muonplan {

struct NsWorkspaceLayout {
  size_t x0 = 0, x1 = 0, a = 0, b = 0, sum_sq = 0, scale = 0;  // region offsets, bytes
  size_t total = 0;                                            // bytes
};

NsWorkspaceLayout ns_workspace_layout(int64_t batch, int64_t rows, int64_t cols);

}  // namespace muonplan
