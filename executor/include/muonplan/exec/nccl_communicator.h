// The NCCL communicator (executor/cuda/nccl_communicator.cc; built with the CUDA backend when
// NCCL is found, MUONPLAN_HAVE_NCCL): all-to-alls of CUDA backend memory over NCCL, everything
// else through a host `control` communicator (the MPI one). docs/executor.md, "CUDA".
//
//   ialltoallv  one NCCL group of ncclSend/ncclRecv, only to peers with nonzero byte counts (a
//               short batch contacts only its owners); this rank's own part is a device copy.
//               It runs on the communicator's stream, after the work already queued on the
//               backend's current lane. Request::wait() polls for completion with a deadline of
//               timeout_s, servicing control->poll() and NCCL's asynchronous error as it goes,
//               then makes the current lane wait for the result.
//   barrier, broadcast, allreduce_max, allreduce_sum_u64
//               delegated to `control`: host values, as the step and execute() use them
//               (broadcast also accepts backend memory and stages it through the host).
//   failures    an NCCL error or a missed deadline aborts the NCCL communicator
//               (ncclCommAbort), then asks control->check_peers(), which throws RankFailure
//               naming a rank that stopped answering; otherwise a std::runtime_error with NCCL's
//               text and the step. poll, check_peers, announce_failure, set_step reach
//               `control`'s failure detector (its watchdog; communicator.h). After an abort
//               every further all-to-all throws.
//   bytes       alltoall_bytes_sent() counts what ialltoallv sends to other ranks, as for every
//               communicator (Communicator::ialltoallv).
#pragma once

#include <memory>

#include "muonplan/exec/communicator.h"
#include "muonplan/exec/cuda_backend.h"

namespace muonplan::exec {

// Collective: every rank of `control` calls it. Rank 0 creates the NCCL id and broadcasts it
// through `control`; the NCCL communicator is set up with a deadline of timeout_s (seconds)
// on the backend's device. `backend` must outlive the communicator.
std::unique_ptr<Communicator> make_nccl_communicator(CudaBackend& backend,
                                                     std::unique_ptr<Communicator> control,
                                                     double timeout_s);

}  // namespace muonplan::exec
