// The CUDA backend (executor/cuda/, built when nvcc is found; docs/executor.md, "CUDA").
//
// Same formulas and rounding as the CPU reference (docs/executor-numerics.md): elementwise
// kernels give the CPU's bits (built with -fmad=false: no a*b+c contracted, as the CPU's
// -ffp-contract=off); GEMMs are cuBLAS (bf16 in and out, fp32 compute, alpha and beta folded
// in, one rounding, no reduced-precision split-K), whose accumulation order differs from
// OpenBLAS's, so CPU and CUDA GEMM results agree within bf16 rounding, not bit for bit.
//
// Lanes are CUDA streams (Backend::kMaxLanes, created at construction); every call enqueues on
// the current lane's stream and returns. What that means for the host:
//   alloc        stream-ordered (a memory pool of the device), zero-filled on the lane.
//   free         stream-ordered: the memory is reused only after the work already queued on the
//                calling lane and on the lane that allocated it (a buffer touched on a third
//                lane must be ordered first, as the Backend contract asks of any cross-lane use).
//   copy_to_device  from alloc_host memory: asynchronous, the source must not change before
//                synchronize(); from any other host memory: returns once the source was read.
//   copy_to_host    into alloc_host memory: asynchronous, read it after synchronize(); into any
//                other host memory: returns when the data is there.
//   alloc_host   pinned (cudaHostAlloc), counted in host_memory().
// memory() counts alloc()'s bytes; the backend's own scratch (cuBLAS workspaces, reduction
// partials, syrk pointer arrays) is not in it, as the CPU backend's fp32 GEMM scratch is not.
//
// One thread drives a backend (the rank's); the device is made current at construction.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "muonplan/exec/backend.h"

struct CUstream_st;  // cudaStream_t is CUstream_st*: no CUDA header needed here

namespace muonplan::exec {

// What the NCCL communicator and the tests need beyond Backend, as data the implementation
// (cuda_backend.cc) fills at construction: no virtual function of its own.
class CudaBackend : public Backend {
 public:
  // The CUDA device this backend runs on.
  int device() const { return device_; }
  // The current lane's stream (set_lane): what the NCCL communicator orders its exchanges
  // after, and makes wait for their results.
  CUstream_st* lane_stream() const { return streams_[lane()]; }
  // Rows and columns of the output blocks syrk_bf16 splits C into, for an n x n C: the
  // MUONPLAN_SYRK_TILE environment variable when set at construction (a multiple of 8, at
  // least 64), otherwise 128 for n <= 1024, 256 for n <= 4096, 512 above.
  int64_t syrk_tile(int64_t n) const {
    if (tile_override_ > 0) return tile_override_;
    return n <= 1024 ? 128 : n <= 4096 ? 256 : 512;
  }

 protected:
  CudaBackend(const KernelTable& kernels, int device, int64_t tile_override)
      : Backend(kernels), device_(device), tile_override_(tile_override) {}

  const int device_;
  const int64_t tile_override_;                    // 0: syrk_tile's rule
  std::array<CUstream_st*, kMaxLanes> streams_{};  // one per lane, created by the implementation
};

// Throws std::runtime_error naming the CUDA error when the device cannot be used (no driver,
// no such device).
std::unique_ptr<CudaBackend> make_cuda_backend(int device);

// The device a rank uses: its rank on the node (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID or
// SLURM_LOCALID from the environment, else rank % local_size) modulo the devices visible.
// Throws std::runtime_error when there is no device.
int local_cuda_device(int rank, int local_size);

// Before MPI_Init (rank and node size unknown yet): when the launcher's environment names this
// rank's local rank, makes device (local rank modulo the devices visible) current, so that a
// CUDA-aware MPI initializes on it. Silent when it cannot: the backend reports the error.
void set_cuda_device_before_mpi();

}  // namespace muonplan::exec
