// Backend: the primitives the step needs, nothing more (docs/architecture.md, "Boundaries"):
// memory, lanes, and a kernel table (kernels.h) every kernel call reaches through launch().
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
#include "muonplan/exec/kernels.h"
#include "muonplan/exec/memory_counter.h"

namespace muonplan::exec {

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
  // The library its GEMMs run on, which the state digest depends on (the fp32 accumulation
  // order differs): "onednn" (its shapes under kOnednnMinMacs on OpenBLAS), "openblas" or
  // "cublas"; and the OpenBLAS kernel where OpenBLAS runs GEMMs (openblas_core_name()), else
  // empty. Written into execute's metrics (gemm_path, openblas_core).
  struct GemmPath {
    std::string library, openblas_core;
  };
  virtual GemmPath gemm_path() const = 0;

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

  // --- kernels (kernels.h): each call below goes through launch() to the backend's table. The
  // GEMM argument checks (sizes, shapes against the stored matrices, no overlap of C with A or B)
  // are made here, once for every backend; an empty GEMM launches nothing.
  void gemm_bf16(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                 float alpha, const MatrixBatch& a, const MatrixBatch& b, float beta,
                 const MatrixBatch& c);
  void syrk_bf16(int64_t batch, int64_t n, int64_t k, float alpha, const MatrixBatch& a, float beta,
                 const MatrixBatch& c);
  void sum_squares_bf16(int64_t batch, int64_t elems, const bf16* x, float* out);
  void sum_squares_f32(int64_t n, const float* x, float* out);
  void scale_bf16(int64_t batch, int64_t elems, const bf16* x, const float* scale, bf16* y);
  void scale_bf16_by(int64_t elems, float s, const bf16* x, bf16* y);
  void ns_scale(int64_t batch, const float* sum_sq, double norm_scale, double eps, float* scale);
  void transpose_bf16(int64_t batch, int64_t rows, int64_t cols, const bf16* x, bf16* y);
  void cast_to_bf16(int64_t n, const float* x, bf16* y);
  void cast_to_f32(int64_t n, const bf16* x, float* y);
  void momentum_f32(int64_t n, float mu, bool nesterov, const float* g, float* m, bf16* u);
  void momentum_bf16(int64_t n, float mu, bool nesterov, const float* g, bf16* m, bf16* u);
  void apply_update(int64_t n, float decay, float s, const bf16* o, float* w);
  void adamw(int64_t n, float lr, float beta1, float beta2, float eps, float wd, int64_t step,
             const float* g, float* w, float* m, float* v);

  // The one place every kernel call passes: a backend runs `call` on its table (or queues it:
  // cpu-async); a wrapper (the step's timing) forwards it to the backend it wraps.
  virtual void launch(const KernelCall& call) = 0;

 protected:
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
