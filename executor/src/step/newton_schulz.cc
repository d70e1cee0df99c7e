// Newton-Schulz on any Backend (newton_schulz.h; docs/muon-step.md section 3).
#include "muonplan/exec/newton_schulz.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace muonplan::exec {
namespace {

using Layout = NsWorkspaceLayout;

Layout layout(int64_t batch, int64_t rows, int64_t cols) {
  return ns_workspace_layout(batch, rows, cols);
}

// A contiguous batch of row-major [rows, cols] bf16 matrices.
MatrixBatch dense(void* ptr, int64_t rows, int64_t cols) {
  return MatrixBatch{ptr, rows, cols, cols, rows * cols};
}

}  // namespace

size_t ns_workspace_bytes(int64_t batch, int64_t rows, int64_t cols) {
  return layout(batch, rows, cols).total;
}

NsWorkspace::NsWorkspace(Backend& backend, int64_t batch, int64_t rows, int64_t cols)
    : backend_(backend), bytes_(ns_workspace_bytes(batch, rows, cols)) {
  data_ = backend_.alloc(bytes_);
}

NsWorkspace::~NsWorkspace() {
  backend_.free(data_);
}

void newton_schulz(Backend& backend, const NsSchedule& schedule, int64_t batch, int64_t rows,
                   int64_t cols, bf16* x, NsWorkspace& workspace, NsVariant variant) {
  if (batch < 0 || rows < 0 || cols < 0) {
    throw std::invalid_argument("newton_schulz: negative size");
  }
  if (batch == 0 || rows == 0 || cols == 0) return;
  if (&workspace.backend() != &backend) {
    throw std::invalid_argument("newton_schulz: the workspace belongs to another backend");
  }
  if (!workspace.fits(batch, rows, cols)) {
    throw std::invalid_argument("newton_schulz: workspace of " + std::to_string(workspace.bytes()) +
                                " bytes, the call needs " +
                                std::to_string(ns_workspace_bytes(batch, rows, cols)));
  }
  const bool transpose = rows > cols;
  const int64_t m = std::min(rows, cols), n = std::max(rows, cols);
  const Layout l = layout(batch, rows, cols);
  char* base = static_cast<char*>(workspace.data());
  auto* x_cur = reinterpret_cast<bf16*>(base + l.x0);
  auto* x_next = reinterpret_cast<bf16*>(base + l.x1);
  auto* a = reinterpret_cast<bf16*>(base + l.a);
  auto* b = reinterpret_cast<bf16*>(base + l.b);
  auto* sum_sq = reinterpret_cast<float*>(base + l.sum_sq);
  auto* scale = reinterpret_cast<float*>(base + l.scale);
  const size_t x_bytes = static_cast<size_t>(batch * m * n) * sizeof(bf16);
  const size_t a_bytes = static_cast<size_t>(batch * m * m) * sizeof(bf16);

  // X <- bf16(U) / (norm_scale * ||U||_F + eps), in the [m, n] orientation. The norm is taken
  // on the oriented copy, so U and U^T run identical arithmetic from here on.
  if (transpose) {
    backend.transpose_bf16(batch, rows, cols, x, x_cur);
  } else {
    backend.copy(x_cur, x, x_bytes);
  }
  backend.sum_squares_bf16(batch, m * n, x_cur, sum_sq);
  backend.ns_scale(batch, sum_sq, schedule.norm_scale, kNsEps, scale);
  backend.scale_bf16(batch, m * n, x_cur, scale, x_cur);

  for (const NsCoefficients& coef : schedule.steps) {
    const MatrixBatch xm = dense(x_cur, m, n), am = dense(a, m, m), bm = dense(b, m, m);
    const auto cb = static_cast<float>(coef.b), cc = static_cast<float>(coef.c);
    if (variant == NsVariant::symmetric) {
      backend.syrk_bf16(batch, m, n, 1.0f, xm, 0.0f, am);  // A = X X^T
      backend.copy(b, a, a_bytes);                         // B = c A A^T + b A  (A = A^T)
      backend.syrk_bf16(batch, m, m, cc, am, cb, bm);
    } else {
      backend.gemm_bf16(batch, false, true, m, m, n, 1.0f, xm, xm, 0.0f, am);  // A = X X^T
      backend.copy(b, a, a_bytes);                                             // B = c A A + b A
      backend.gemm_bf16(batch, false, false, m, m, m, cc, am, am, cb, bm);
    }
    backend.copy(x_next, x_cur, x_bytes);  // X' = B X + a X
    backend.gemm_bf16(batch, false, false, m, n, m, 1.0f, bm, xm, static_cast<float>(coef.a),
                      dense(x_next, m, n));
    std::swap(x_cur, x_next);
  }

  if (transpose) {
    backend.transpose_bf16(batch, m, n, x_cur, x);
  } else {
    backend.copy(x, x_cur, x_bytes);
  }
}

}  // namespace muonplan::exec
