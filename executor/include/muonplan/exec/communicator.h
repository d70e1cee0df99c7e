// Communicator: what the step needs from the collective library, nothing more
// (architecture.md). MPI and NCCL implement it. Buffers are backend memory of the backend the
// communicator was made for (host memory for the CPU backend).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace muonplan::exec {

// A collective in flight; wait() completes it. Destroying an unfinished request waits.
class Request {
 public:
  virtual ~Request() = default;
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Ranks on this rank's node (they share its cores).
  virtual int local_size() const { return 1; }

  // All-to-all with per-peer byte counts and displacements (bytes), started now. A peer with
  // zero counts is not contacted; the byte counter below counts what goes to other ranks.
  virtual std::unique_ptr<Request> ialltoallv(const void* send,
                                              const std::vector<size_t>& send_bytes,
                                              const std::vector<size_t>& send_displs, void* recv,
                                              const std::vector<size_t>& recv_bytes,
                                              const std::vector<size_t>& recv_displs) = 0;
  virtual void barrier() = 0;
  virtual void broadcast(void* data, size_t bytes, int root) = 0;
  // Element-wise reductions over all ranks, in place.
  virtual void allreduce_max(double* values, size_t n) = 0;
  virtual void allreduce_sum_u64(uint64_t* values, size_t n) = 0;

  // Bytes this rank has sent to other ranks through ialltoallv since the last reset.
  virtual uint64_t alltoall_bytes_sent() const = 0;
  virtual void reset_counters() = 0;
};

// A world of one rank in this process: the all-to-all is a local copy. For single-process
// runs and for the unsharded reference the executor checks against.
// Copies go through `backend` (buffers are its memory), which must outlive the communicator.
class Backend;
std::unique_ptr<Communicator> make_self_communicator(Backend& backend);

// MPI_COMM_WORLD; MPI must be initialized (mpi_session below does it).
std::unique_ptr<Communicator> make_mpi_communicator();

// Initializes MPI for the process's lifetime (MPI_Init_thread with MPI_THREAD_FUNNELED) and
// finalizes it on destruction. Errors on a communicator return instead of aborting, so a
// failed collective becomes an exception with the MPI error text.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
};

}  // namespace muonplan::exec
