// Newton-Schulz orthogonalization (docs/muon-step.md section 3), written once against Backend:
// every backend runs these exact steps, and the CPU backend's result is the oracle.
//
//   m = min(rows, cols), n = max(rows, cols); X is [m, n] (the transpose when rows > cols)
//   X <- bf16(X * s),  s = fp32(1 / (norm_scale * ||X||_F + 1e-8))      (one rounding)
//   per (a, b, c):  A  <- bf16(X X^T)                 gemm, beta 0
//                   B  <- bf16(c A A + b A)           B := A, then gemm alpha c, beta b
//                   X' <- bf16(B X + a X)             X' := X, then gemm alpha 1, beta a
//                   swap(X, X')
//
// ||X||_F comes from Backend::sum_squares_bf16 (fixed-order double sums, returned in fp32) and
// the scale from Backend::ns_scale (double). Each GEMM output is rounded to bf16 once; the
// schedule's a, b, c enter the GEMMs as fp32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "muonplan/exec/backend.h"
#include "muonplan/planfile/ns_schedule.h"
#include "muonplan/planfile/ns_workspace.h"

namespace muonplan::exec {

inline constexpr double kNsEps = 1e-8;  // added to norm_scale * ||U||_F

// Backend memory NS needs for `batch` matrices [rows, cols]: ns_workspace_layout's total
// (muonplan/planfile/ns_workspace.h), which the cost model counts too.
size_t ns_workspace_bytes(int64_t batch, int64_t rows, int64_t cols);

// Backend memory for newton_schulz(), allocated once and reused by every call that fits.
// Frees on destruction; the backend must outlive it. Not copyable.
class NsWorkspace {
 public:
  NsWorkspace(Backend& backend, int64_t batch, int64_t rows, int64_t cols);
  ~NsWorkspace();
  NsWorkspace(const NsWorkspace&) = delete;
  NsWorkspace& operator=(const NsWorkspace&) = delete;

  Backend& backend() const { return backend_; }
  size_t bytes() const { return bytes_; }
  void* data() const { return data_; }
  // Whether a call on `batch` matrices [rows, cols] fits in this workspace.
  bool fits(int64_t batch, int64_t rows, int64_t cols) const {
    return ns_workspace_bytes(batch, rows, cols) <= bytes_;
  }

 private:
  Backend& backend_;
  size_t bytes_ = 0;
  void* data_ = nullptr;
};

// How NS computes the two symmetric products A = X X^T and A A (docs/muon-step.md section 3):
//   plain      gemm_bf16 for both: 4 m^2 n + 2 m^3 FLOPs per iteration.
//   symmetric  Backend::syrk_bf16 for both (A is symmetric, so A A = A A^T): a backend that
//              computes one triangle does about 3 m^2 n + m^3. B X is a full GEMM either way.
// Both round each GEMM output to bf16 once and differ only in fp32 accumulation order, so they
// agree within bf16 rounding (not bit for bit: on the CPU backend, whose syrk_bf16 is the
// GEMM, A A^T equals A A only where X X^T came out exactly symmetric; tests/exec/
// ns_symmetric_test.cc). Each variant alone keeps every guarantee below.
enum class NsVariant { plain, symmetric };

// Replaces each of the `batch` contiguous bf16 matrices [rows, cols] at x (backend memory) by
// its Newton-Schulz orthogonalization, same shape. When rows > cols the matrices are
// transposed into the workspace (an exact copy), so NS(U^T) == NS(U)^T bit for bit. Each
// matrix's result depends only on that matrix and the schedule: never on the batch it runs in.
// Throws std::invalid_argument if the workspace does not fit or belongs to another backend.
void newton_schulz(Backend& backend, const NsSchedule& schedule, int64_t batch, int64_t rows,
                   int64_t cols, bf16* x, NsWorkspace& workspace,
                   NsVariant variant = NsVariant::plain);

}  // namespace muonplan::exec
