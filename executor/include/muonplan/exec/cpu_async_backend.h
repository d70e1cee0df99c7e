// The CPU backend with asynchronous lanes (`--backend cpu-async`, docs/executor.md, "Lanes"):
// the CPU reference's arithmetic (its bits), run the way the CUDA backend runs it, so that a
// missing dependency between lanes changes the results on a machine without a GPU.
//
// Each lane is a queue drained by its own thread, in order, as a CUDA stream is. What the calls
// do (the CUDA backend's contract, cuda_backend.h):
//   alloc        the memory is poisoned (every byte 0xFF: NaN in bf16 and fp32) and its zero-fill
//                is queued on the current lane, as cudaMallocFromPoolAsync + cudaMemsetAsync.
//   free         queued on the allocating lane after the calling lane's work (an event wait),
//                poisoning the memory before it goes back.
//   copy_to_device / copy_to_host  queued; from or into alloc_host memory the call returns at
//                once, otherwise after the lane has run the copy (pageable memory).
//   kernels      queued on the current lane.
//   join_lanes   an event wait on every lane for every other lane's work queued so far.
//   synchronize / synchronize_lane  the host waits for every lane / the current one.
// An operation runs when its lane reaches it and, with max_delay_us > 0, after a delay drawn
// uniformly from [0, max_delay_us] (a random stream per lane from `seed`) unless something
// waits for it: the host (a synchronize, a pageable copy) or another lane (an event). So work
// no one waits for can run arbitrarily late, which is what exposes a missing wait.
//
// Not modelled: concurrent kernel execution (operations of different lanes take turns, one at
// a time, in a nondeterministic order; a GPU also overlaps them, and limits how many run at
// once), and memory-pool reuse (a freed block goes back to the heap, poisoned, rather than to
// the next alloc() of the same lane).
#pragma once

#include <cstdint>
#include <memory>

#include "muonplan/exec/backend.h"
#include "muonplan/exec/communicator.h"

namespace muonplan::exec {

struct CpuAsyncOptions {
  uint64_t seed = 1;
  int64_t max_delay_us = 0;  // 0: each operation runs as soon as its lane reaches it
  bool drop_joins = false;   // tests only: join_lanes() does nothing (a dropped wait)
  // Tests only: where set, adds the bytes of every copy whose host side is pageable (not from
  // alloc_host), so a test can check that a step moves what the planner calls pinned through
  // pinned memory. Written by the host thread.
  int64_t* pageable_copy_bytes = nullptr;
};

std::unique_ptr<Backend> make_cpu_async_backend(const CpuAsyncOptions& options);

// A host communicator (MPI, self) made to order its all-to-alls like NCCL on a lane: each one
// starts after the current lane's queued work (the host waits for that lane, since MPI runs on
// the host thread), and its results are in place when wait() returns, before anything queued
// later. Broadcasts wait for every lane first. `backend` must outlive it.
std::unique_ptr<Communicator> make_lane_ordered_communicator(Backend& backend,
                                                             std::unique_ptr<Communicator> inner);

}  // namespace muonplan::exec
