// Backend: the primitives the step needs, nothing more (docs/architecture.md, "Boundaries"):
// memory, lanes, and a kernel table (kernels.h) every kernel call reaches through launch().
// The step algorithm (step.cc, newton_schulz.cc) is written once against this interface; the
// CPU backend (exact bf16 emulation, the oracle) and the CUDA backend implement it.
//
// Memory is the backend's: pointers from alloc() may only be touched through the backend
// (on CUDA they are device pointers). Host pointers are plain memory. Calls are ordered: a
// backend may run them asynchronously, but each call sees the effects of the calls before it;
// synchronize() waits for all of them.
//
// The interface's entries, counted against issue 47's bound of 15 (virtual functions and kernel
// table entries together; the virtual destructor not counted): the 7 virtual functions below
// (describe, alloc, free, copy, synchronize, runtime_memory, launch) and the 8 entries of
// KernelTable (kernels.h). The rest is not an entry: the kernel wrappers (gemm_bf16, ...) and
// the named forms of a kind (alloc_host, copy_to_device, synchronize_lane, ...) are non-virtual
// helpers, and the current lane and the byte counts are state every backend kept alike, held
// here (a wrapper shares the one it wraps). tests/exec/backend_interface_test.cc counts them.
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

// The library a backend's GEMMs run on, which the state digest depends on (the fp32
// accumulation order differs): "onednn" (its shapes under kOnednnMinMacs on OpenBLAS),
// "openblas" or "cublas"; and the OpenBLAS kernel where OpenBLAS runs GEMMs
// (openblas_core_name()), else empty. Written into execute's metrics (gemm_path, openblas_core).
struct GemmPath {
  std::string library, openblas_core;
};

// What a backend is (describe()).
struct BackendInfo {
  std::string name;
  // Whether every call is done when it returns, so that host wall time around calls is their
  // run time (the CPU backend). False where calls only enqueue (CUDA, cpu-async): the step's
  // device and PCIe busy times, and its trace spans of them, are then left out, not reported
  // as launch times (docs/executor.md, "Metrics").
  bool host_timed = true;
  GemmPath gemm_path;
};

// device: the backend's memory (on CUDA, device memory from a stream-ordered pool).
// pinned_host: host memory for offloaded state and staging (docs/muon-step.md section 5), pinned
// on CUDA, plain aligned memory on the CPU backends; touched directly by the host kernels
// (host_kernels.h) and a valid source and destination of host_to_device / device_to_host copies.
enum class MemoryKind { device, pinned_host };
// host_to_device and device_to_host take host memory on the host side (pinned or not: from or
// into pageable memory the call returns once the host side is done); device_to_device copies
// within the backend's memory and may overlap (a memmove).
enum class Copy { host_to_device, device_to_host, device_to_device };
// all_lanes: the host waits for every lane's queued work. current_lane: the host waits for the
// current lane's only (before it reads what a device_to_host copy into pinned memory wrote, or
// rewrites a pinned source). join_lanes: every lane waits, without blocking the host, for the
// work queued so far on every lane (CUDA: an event recorded on each stream, waited on by each
// stream), for state one lane writes and the others read next (whole staging in and out, the
// check sums).
enum class Sync { all_lanes, current_lane, join_lanes };

class Backend {
 public:
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  // --- the virtual functions: 7 entries
  virtual BackendInfo describe() const = 0;
  // Zero-filled; throws std::bad_alloc on failure; counted in memory() (device) or
  // host_memory() (pinned_host). free(nullptr) does nothing.
  virtual void* alloc(size_t bytes, MemoryKind kind) = 0;
  virtual void free(void* ptr, MemoryKind kind) = 0;
  virtual void copy(void* dst, const void* src, size_t bytes, Copy direction) = 0;
  // Backends whose calls are done when they return need nothing (the default).
  virtual void synchronize(Sync scope) { (void)scope; }
  // The runtime's own figures (RuntimeMemory), where the backend has a device runtime; none on
  // the CPU backends, whose memory is what alloc() counts.
  virtual std::optional<RuntimeMemory> runtime_memory() const { return std::nullopt; }
  // The one place every kernel call passes: runs `call` on this backend's table (kernels()), or
  // queues it (cpu-async); a wrapper (the step's timing) forwards it to the backend it wraps.
  virtual void launch(const KernelCall& call);

  // --- facts, by name
  std::string name() const { return describe().name; }
  bool host_timed() const { return describe().host_timed; }

  // --- memory, by kind
  void* alloc(size_t bytes) { return alloc(bytes, MemoryKind::device); }
  void free(void* ptr) { free(ptr, MemoryKind::device); }
  void* alloc_host(size_t bytes) { return alloc(bytes, MemoryKind::pinned_host); }
  void free_host(void* ptr) { free(ptr, MemoryKind::pinned_host); }
  // Plain (pageable) host memory on every backend, zero-filled, counted in host_memory() as
  // alloc_host's: `optimizer` offload's state unless the plan pins it (the planner's pageable
  // PCIe rate). Copies to and from it return once the host side is done (the lane waits).
  void* alloc_pageable(size_t bytes);
  void free_pageable(void* ptr);
  void copy_to_device(void* dst, const void* host_src, size_t bytes) {
    copy(dst, host_src, bytes, Copy::host_to_device);
  }
  void copy_to_host(void* host_dst, const void* src, size_t bytes) {
    copy(host_dst, src, bytes, Copy::device_to_host);
  }
  void copy(void* dst, const void* src, size_t bytes) {
    copy(dst, src, bytes, Copy::device_to_device);
  }
  // The bytes alloc() holds now and their peak since reset_peak(), per kind.
  MemoryStats memory() const { return shared_->device.stats(); }
  void reset_peak() { shared_->device.reset_peak(); }
  MemoryStats host_memory() const { return shared_->host.stats(); }
  void reset_host_peak() { shared_->host.reset_peak(); }

  // --- ordering across batches in flight: calls after set_lane(k) run on lane k (a CUDA
  // stream). Calls on one lane are ordered; calls on different lanes are ordered only through
  // Request::wait() and synchronize(). The step gives each batch in flight its own lane and
  // touches only that batch's buffers and parameter slices on it. Backends without
  // concurrency ignore it. Lane 0 is the default; lanes are 0..kMaxLanes-1 (std::invalid_argument
  // otherwise).
  static constexpr int kMaxLanes = kMaxBatchesInFlight;  // units.h: a plan asks for at most this
  void set_lane(int lane);
  int lane() const { return shared_->lane; }
  void synchronize() { synchronize(Sync::all_lanes); }
  void synchronize_lane() { synchronize(Sync::current_lane); }
  void join_lanes() { synchronize(Sync::join_lanes); }

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
  void elementwise(const Elementwise& op);

  // The table launch() runs calls on, its null entries set to the defaults (with_defaults);
  // all null on a wrapper, which overrides launch().
  const KernelTable& kernels() const { return kernels_; }

  static constexpr int kVirtualEntries = 7;
  static constexpr int kEntries = kVirtualEntries + kKernelTableEntries;
  static_assert(kEntries <= 15, "issue 47: the backend interface has at most 15 entries");

 protected:
  // A backend with its own kernel table (with_defaults(kernels)), lane and byte counts.
  explicit Backend(const KernelTable& kernels);
  // A backend with its own lane and byte counts whose launch() runs kernels elsewhere
  // (cpu-async queues them for the backend it wraps).
  Backend();
  // A wrapper (the step's timing): the lane and the byte counts are those of `inner`, which it
  // forwards to and which outlives it.
  struct Wraps {
    Backend& inner;
  };
  explicit Backend(Wraps w) : shared_(w.inner.shared_) {}

  // The counts an implementation of alloc()/free() adds to and removes from.
  MemoryCounter& counted(MemoryKind kind) {
    return kind == MemoryKind::device ? shared_->device : shared_->host;
  }
  // `lane`, or std::invalid_argument when it is not in 0..kMaxLanes-1.
  static int checked_lane(int lane);
  // Whether [p, p + bytes) lies in one of `allocations` (start -> bytes): a copy from or into
  // such pinned memory may return before it has run.
  static bool within_one(const std::map<uintptr_t, size_t>& allocations, const void* p,
                         size_t bytes);

 private:
  // What every backend kept alike: the current lane and the bytes alloc() holds, per kind.
  struct Shared {
    int lane = 0;
    MemoryCounter device, host;
  };
  Shared own_;
  Shared* shared_ = &own_;
  KernelTable kernels_;
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
