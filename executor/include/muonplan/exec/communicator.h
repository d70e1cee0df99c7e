// Communicator: what the step needs from the collective library, nothing more
// (docs/architecture.md). MPI and NCCL implement it. Buffers are backend memory of the backend the
// communicator was made for (host memory for the CPU backend).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace muonplan::exec {

// A collective in flight; wait() completes it. Destroying an unfinished request waits.
class Request {
 public:
  virtual ~Request() = default;
  virtual void wait() = 0;
};

// Another rank failed (it announced an error, or stopped answering within the communicator's
// timeout). what() names the failed rank and the step; every surviving rank throws it
// (docs/reliability.md).
class RankFailure : public std::runtime_error {
 public:
  RankFailure(int failed_rank, int64_t step, const std::string& what)
      : std::runtime_error(what), failed_rank(failed_rank), step(step) {}
  int failed_rank;
  int64_t step;
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

  // --- failures (docs/reliability.md). Every wait has a deadline; a rank that dies or exits
  // with an error makes every other rank throw RankFailure instead of hanging.
  // The step in progress (0 before the first), named in failure messages.
  virtual void set_step(int64_t step) { step_ = step; }
  int64_t step() const { return step_; }
  // Tells the other ranks that this one is exiting with `what` (or, after a RankFailure, relays
  // that failure, so ranks that were computing learn the rank that failed first), so they stop
  // at once with a message naming it rather than at their timeout. Then waits until every rank
  // not known to be dead has announced as well (all have printed their lines) or the timeout
  // passes: a rank that left early could make mpirun kill the others before they read the
  // notice. Bounded in time, never throws. Call it once, after printing this rank's message.
  virtual void announce_failure(const std::string& what) { (void)what; }
  // Services control traffic (liveness probes, failure notices) without blocking; throws
  // RankFailure when a peer has announced a failure. Long waits call it while they poll.
  virtual void poll() {}
  // For a wait past its deadline: finds ranks that do not answer a liveness probe within a
  // few seconds and throws RankFailure naming the lowest; returns when all answer.
  virtual void check_peers() {}

 protected:
  int64_t step_ = 0;
};

// A world of one rank in this process: the all-to-all is a local copy. For single-process
// runs and for the unsharded reference the executor checks against.
// Copies go through `backend` (buffers are its memory), which must outlive the communicator.
class Backend;
std::unique_ptr<Communicator> make_self_communicator(Backend& backend);

// MPI_COMM_WORLD; MPI must be initialized (MpiSession below does it). Collectives are polled:
// a wait that has not completed after timeout_s probes every rank, and a rank that does not
// answer within a few seconds more is reported as failed (RankFailure). A rank answers only
// while it waits in this communicator, so timeout_s must exceed the longest computation
// between two of its calls. Requests must not outlive the communicator.
std::unique_ptr<Communicator> make_mpi_communicator(double timeout_s = 20);

// Initializes MPI for the process's lifetime (MPI_Init_thread with MPI_THREAD_FUNNELED) and
// finalizes it on destruction. After a failure it ends the job with MPI_Abort(1) instead when
// a rank is dead or did not announce its own failure (MPI_Finalize would wait for it forever),
// or when mpirun was told to keep the job alive on failures (it would report success). Errors
// on a communicator return instead of aborting, so a failed collective becomes an exception
// with the MPI error text. SIGTERM (mpirun tearing the job down) prints "muonplan: rank R:
// terminated by the launcher during step S" and exits 1 (docs/reliability.md).
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
};

}  // namespace muonplan::exec
