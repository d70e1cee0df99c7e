// Backend: the primitives the step needs, nothing more (docs/architecture.md, "Boundaries").
// The step algorithm (step.cc, newton_schulz.cc) is written once against this interface; the
// CPU backend (exact bf16 emulation, the oracle) and the CUDA backend implement it.
//
// Memory is the backend's: pointers from alloc() may only be touched through the backend
// (on CUDA they are device pointers). Host pointers are plain memory. Calls are ordered: a
// backend may run them asynchronously, but each call sees the effects of the calls before it;
// synchronize() waits for all of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "muonplan/base/units.h"
#include "muonplan/exec/bf16.h"
#include "muonplan/exec/memory_counter.h"

namespace muonplan::exec {

// One strided batch of row-major matrices: element (b, i, j) at ptr[b*stride + i*ld + j].
struct MatrixBatch {
  void* ptr = nullptr;
  int64_t rows = 0, cols = 0, ld = 0, stride = 0;
};

// What the device runtime really holds, beside the bytes alloc() counts (memory()): the pool's
// high-water marks, and the device's used memory (context, library workspaces, NCCL buffers).
struct RuntimeMemory {
  size_t pool_reserved_high_bytes = 0;  // cudaMemPoolAttrReservedMemHigh
  size_t pool_used_high_bytes = 0;      // cudaMemPoolAttrUsedMemHigh
  size_t device_used_bytes = 0;         // cudaMemGetInfo: total - free, when asked
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Whether every call is done when it returns, so that host wall time around calls is their
  // run time (the CPU backend). False where calls only enqueue (CUDA, cpu-async): the step's
  // device and PCIe busy times, and its trace spans of them, are then left out, not reported
  // as launch times (docs/executor.md, "Metrics").
  virtual bool host_timed() const { return true; }

  // --- memory
  virtual void* alloc(size_t bytes) = 0;  // zero-filled; throws std::bad_alloc on failure
  virtual void free(void* ptr) = 0;
  virtual void copy_to_device(void* dst, const void* host_src, size_t bytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* src, size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  virtual MemoryStats memory() const = 0;
  // The runtime's own figures (RuntimeMemory), where the backend has a device runtime; none on
  // the CPU backends, whose memory is what alloc() counts.
  virtual std::optional<RuntimeMemory> runtime_memory() const { return std::nullopt; }
  virtual void reset_peak() = 0;
  virtual void synchronize() = 0;

  // --- host memory for offloaded state and staging (docs/muon-step.md section 5): pinned on CUDA,
  // plain aligned memory on the CPU backend; zero-filled; counted in host_memory(). Host
  // pointers are touched directly by the host kernels (host_kernels.h) and are valid sources
  // and destinations of copy_to_device / copy_to_host.
  virtual void* alloc_host(size_t bytes);
  virtual void free_host(void* ptr);
  // Plain (pageable) host memory on every backend, zero-filled, counted in host_memory() as
  // alloc_host's: `optimizer` offload's state unless the plan pins it (the planner's pageable
  // PCIe rate). Copies to and from it return once the host side is done (the lane waits).
  void* alloc_pageable(size_t bytes);
  void free_pageable(void* ptr);
  MemoryStats host_memory() const { return host_counter_.stats(); }
  void reset_host_peak() { host_counter_.reset_peak(); }

  // --- ordering across batches in flight: calls after set_lane(k) run on lane k (a CUDA
  // stream). Calls on one lane are ordered; calls on different lanes are ordered only through
  // Request::wait() and synchronize(). The step gives each batch in flight its own lane and
  // touches only that batch's buffers and parameter slices on it. Backends without
  // concurrency ignore it. Lane 0 is the default; lanes are 0..kMaxLanes-1.
  static constexpr int kMaxLanes = kMaxBatchesInFlight;  // units.h: a plan asks for at most this
  virtual void set_lane(int lane) { (void)lane; }
  // Every lane waits, without blocking the host, for all the work queued so far on every lane
  // (CUDA: an event recorded on each stream, waited on by each stream). For state one lane
  // writes and the others read next (whole staging in and out, the check sums). Backends
  // without concurrency need nothing.
  virtual void join_lanes() {}
  // The host waits for the current lane's work only (synchronize() waits for every lane): before
  // the host reads what a copy_to_host into alloc_host memory wrote, or rewrites a pinned source.
  virtual void synchronize_lane() { synchronize(); }

  // --- bf16 GEMM, fp32 accumulation, one rounding of each output element:
  // C[b] = bf16(alpha * op(A[b]) op(B[b]) + beta * C[b]), op = transpose when trans_*.
  // A, B, C hold bf16. Shapes are of op(A): m x k, op(B): k x n, C: m x n; a, b, c describe the
  // stored matrices (a.rows x a.cols is k x m when trans_a). C must not overlap A or B (as in
  // cuBLAS); A and B may be the same matrices (X X^T). With beta == 0, C is not read.
  // The argument checks (sizes, shapes against the stored matrices, no overlap of C with A or B)
  // are made here, once for every backend; run_gemm_bf16 gets valid, non-empty calls.
  void gemm_bf16(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                 float alpha, const MatrixBatch& a, const MatrixBatch& b, float beta,
                 const MatrixBatch& c);
  // --- symmetric rank-k update, for symmetric Newton-Schulz (docs/muon-step.md section 3):
  // C[b] = bf16(alpha * A[b] A[b]^T + beta * C[b]), fp32 accumulation, one rounding, for a batch
  // of row-major A[b] of n x k (a.rows = n, a.cols = k) and C[b] of n x n. Every element of C is
  // written. With beta != 0, C must be symmetric on entry (NS passes B := A); with beta == 0 it
  // is not read. C must not overlap A. The default calls gemm_bf16(trans_b, A, A): the GEMM's
  // bits, not faster. A backend may instead compute only the blocks on and above the diagonal
  // and mirror them (about half the FLOPs for k >> n); C is then exactly symmetric.
  void syrk_bf16(int64_t batch, int64_t n, int64_t k, float alpha, const MatrixBatch& a, float beta,
                 const MatrixBatch& c);

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
  // host memory (copy, compute, copy back); a device backend overrides it to avoid the sync.
  virtual void ns_scale(int64_t batch, const float* sum_sq, double norm_scale, double eps,
                        float* scale);
  // y[b] = x[b]^T, exact: x holds [rows, cols] matrices, y gets [cols, rows]; y must not overlap
  // x. The default goes through host memory; backends override it.
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

 protected:
  // The GEMM and rank-k update proper, called by gemm_bf16 / syrk_bf16 after their checks with
  // batch, m (n) >= 1 and every matrix as described; k may be 0 (C = bf16(beta * C)).
  virtual void run_gemm_bf16(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n,
                             int64_t k, float alpha, const MatrixBatch& a, const MatrixBatch& b,
                             float beta, const MatrixBatch& c) = 0;
  virtual void run_syrk_bf16(int64_t batch, int64_t n, int64_t k, float alpha, const MatrixBatch& a,
                             float beta, const MatrixBatch& c);

  // Bookkeeping for host_memory(); an override of alloc_host/free_host calls these.
  void track_host_alloc(void* ptr, size_t bytes) { host_counter_.add(ptr, bytes); }
  void track_host_free(void* ptr) { host_counter_.remove(ptr); }

  // For the backends with lanes (CUDA, cpu-async), whose set_lane takes what this returns:
  // `lane`, or std::invalid_argument when it is not in 0..kMaxLanes-1.
  static int checked_lane(int lane);
  // Whether [p, p + bytes) lies in one of `allocations` (start -> bytes): a copy from or into
  // such pinned memory may return before it has run.
  static bool within_one(const std::map<uintptr_t, size_t>& allocations, const void* p,
                         size_t bytes);

 private:
  MemoryCounter host_counter_;
};

// The CPU reference backend (cpu_backend.cc, docs/executor-numerics.md): exact bf16 emulation;
// results do not depend on the number of OpenMP threads. Sets OpenBLAS to one thread per call
// (process-wide): the backend runs single-threaded sgemm calls on fixed row blocks in parallel.
// Its GEMM path (docs/executor-numerics.md, "GEMM paths"): `onednn`, bf16 operands on the CPU's
// bf16 units (AMX, AVX512_BF16), the default; `openblas`, the fp32-emulated oracle (OpenBLAS
// sgemm on exact fp32 copies). The two differ only in the fp32 accumulation order. Without
// AVX-512 oneDNN has no bf16 matmul and the backend runs `openblas` whatever was asked.
enum class CpuGemm { onednn, openblas };
// The environment's choice: MUONPLAN_CPU_GEMM=onednn|openblas (unset or empty: onednn); throws
// std::invalid_argument on another value.
CpuGemm default_cpu_gemm();
// On the onednn path, GEMMs with m * n * k below onednn_min_macs run on OpenBLAS (creating a
// oneDNN primitive costs more than a small GEMM; the choice depends on the shape alone).
constexpr int64_t kOnednnMinMacs = int64_t{1} << 21;  // 128^3
std::unique_ptr<Backend> make_cpu_backend();          // default_cpu_gemm()'s path, kOnednnMinMacs
std::unique_ptr<Backend> make_cpu_backend(CpuGemm gemm, int64_t onednn_min_macs = kOnednnMinMacs);
// The path a CPU backend runs (throws std::invalid_argument for another backend), and its name.
CpuGemm cpu_gemm_path(const Backend& backend);
const char* cpu_gemm_name(CpuGemm gemm);

}  // namespace muonplan::exec
