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

// The failure detection behind a communicator (docs/reliability.md): the MPI communicator's
// watchdog (mpi_watchdog.h). A communicator layered on another one (NCCL over MPI) shares that
// one's detector. Communicator's failure calls below reach it; see there for what each does.
class FailureDetector {
 public:
  virtual ~FailureDetector() = default;
  virtual void set_step(int64_t step) = 0;
  virtual void announce_failure(const std::string& what) noexcept = 0;
  virtual void poll() = 0;
  virtual void check_peers() = 0;
};

// What every communicator shares lives here: the argument checks and the byte counter of the
// all-to-all, the step in progress, and the failure calls, forwarded to the FailureDetector.
// An implementation supplies the transport (do_ialltoallv, the collectives) and, if it can lose
// peers, a detector.
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Ranks on this rank's node (they share its cores).
  virtual int local_size() const { return 1; }

  // All-to-all with per-peer byte counts and displacements (bytes), started now. A peer with
  // zero counts is not contacted; the byte counter below counts what goes to other ranks.
  // Throws std::invalid_argument unless there is one count and one displacement per rank and
  // this rank's part to itself has the same length both ways (after check_limits).
  std::unique_ptr<Request> ialltoallv(const void* send, const std::vector<size_t>& send_bytes,
                                      const std::vector<size_t>& send_displs, void* recv,
                                      const std::vector<size_t>& recv_bytes,
                                      const std::vector<size_t>& recv_displs);
  virtual void barrier() = 0;
  virtual void broadcast(void* data, size_t bytes, int root) = 0;
  // Element-wise reductions over all ranks, in place.
  virtual void allreduce_max(double* values, size_t n) = 0;
  virtual void allreduce_sum_u64(uint64_t* values, size_t n) = 0;

  // Bytes this rank has sent to other ranks through ialltoallv since the last reset (an
  // exchange that failed to start is not counted).
  uint64_t alltoall_bytes_sent() const { return sent_bytes_; }
  void reset_counters() { sent_bytes_ = 0; }

  // --- failures (docs/reliability.md). Every wait has a deadline; a rank that dies or exits
  // with an error makes every other rank throw RankFailure instead of hanging. Without a
  // detector (a world of one) these record the step and do nothing else.
  // The step in progress (0 before the first), named in failure messages.
  void set_step(int64_t step);
  int64_t step() const { return step_; }
  // Tells the other ranks that this one is exiting with `what` (or, after a RankFailure, relays
  // that failure, so ranks that were computing learn the rank that failed first), so they stop
  // at once with a message naming it rather than at their timeout. Then waits until every rank
  // not known to be dead has announced as well (all have printed their lines) or the timeout
  // passes: a rank that left early could make mpirun kill the others before they read the
  // notice. Bounded in time, never throws. Call it once, after printing this rank's message.
  void announce_failure(const std::string& what) noexcept;
  // Services control traffic (liveness probes, failure notices) without blocking; throws
  // RankFailure when a peer has announced a failure (after on_peer_failure), then checks the
  // transport (poll_transport). Long waits call it while they poll.
  void poll();
  // For a wait past its deadline: finds ranks that do not answer a liveness probe within a
  // few seconds and throws RankFailure naming the lowest; returns when all answer.
  void check_peers();

 protected:
  // A transport's own limits on the counts and displacements (MPI's are ints), checked by
  // ialltoallv once it knows there is one entry per rank, before anything else.
  virtual void check_limits(const std::vector<size_t>& /*send_bytes*/,
                            const std::vector<size_t>& /*send_displs*/,
                            const std::vector<size_t>& /*recv_bytes*/,
                            const std::vector<size_t>& /*recv_displs*/) const {}
  // The all-to-all proper, called by ialltoallv with checked arguments (one entry per rank,
  // this rank's own part as long both ways).
  virtual std::unique_ptr<Request> do_ialltoallv(const void* send,
                                                 const std::vector<size_t>& send_bytes,
                                                 const std::vector<size_t>& send_displs, void* recv,
                                                 const std::vector<size_t>& recv_bytes,
                                                 const std::vector<size_t>& recv_displs) = 0;
  // The detector the failure calls reach (the base class does not own it: the implementation
  // keeps it valid while it is set), and another communicator's, to share it.
  void set_failure_detector(FailureDetector* detector) { detector_ = detector; }
  static FailureDetector* failure_detector_of(const Communicator& other) { return other.detector_; }
  // The first half of poll(): the detector's poll; when it throws, on_peer_failure() runs
  // before the exception goes on. The transport's own waits call it.
  void poll_failures();
  // The second half of poll(): the transport's own error state (NCCL's asynchronous error).
  virtual void poll_transport() {}
  // The detector reported a failure while polling: stop the transport (NCCL aborts), since
  // nothing in flight will complete.
  virtual void on_peer_failure() noexcept {}

 private:
  int64_t step_ = 0;
  uint64_t sent_bytes_ = 0;
  FailureDetector* detector_ = nullptr;
};

// Inline, so that muonplan_checkpoint (which calls poll() but links neither MPI nor
// muonplan_exec) needs no library for them.
inline std::unique_ptr<Request> Communicator::ialltoallv(
    const void* send, const std::vector<size_t>& send_bytes, const std::vector<size_t>& send_displs,
    void* recv, const std::vector<size_t>& recv_bytes, const std::vector<size_t>& recv_displs) {
  const size_t n = static_cast<size_t>(size());
  const int me = rank();
  if (send_bytes.size() != n || send_displs.size() != n || recv_bytes.size() != n ||
      recv_displs.size() != n) {
    throw std::invalid_argument("all-to-all: counts and displacements need one entry per rank (" +
                                std::to_string(n) + ")");
  }
  check_limits(send_bytes, send_displs, recv_bytes, recv_displs);
  if (send_bytes[me] != recv_bytes[me]) {
    throw std::invalid_argument("all-to-all: this rank sends itself " +
                                std::to_string(send_bytes[me]) + " bytes but receives " +
                                std::to_string(recv_bytes[me]));
  }
  std::unique_ptr<Request> request =
      do_ialltoallv(send, send_bytes, send_displs, recv, recv_bytes, recv_displs);
  for (size_t p = 0; p < n; ++p) {
    if (static_cast<int>(p) != me) sent_bytes_ += send_bytes[p];
  }
  return request;
}

inline void Communicator::set_step(int64_t step) {
  step_ = step;
  if (detector_) detector_->set_step(step);
}

inline void Communicator::announce_failure(const std::string& what) noexcept {
  if (detector_) detector_->announce_failure(what);
}

inline void Communicator::poll_failures() {
  if (!detector_) return;
  try {
    detector_->poll();
  } catch (...) {
    on_peer_failure();
    throw;
  }
}

inline void Communicator::poll() {
  poll_failures();
  poll_transport();
}

inline void Communicator::check_peers() {
  if (detector_) detector_->check_peers();
}

// A world of one rank in this process: the all-to-all is a local copy. For single-process
// runs and for the unsharded reference the executor checks against.
// Copies go through `backend` (buffers are its memory), which must outlive the communicator.
class Backend;
std::unique_ptr<Communicator> make_self_communicator(Backend& backend);

// `inner` (MPI) with its all-to-alls staged through the backend's pinned host memory: the send
// buffer is copied to the host after the current lane's work, MPI exchanges host buffers, and
// wait() queues the received segments' copies back on the current lane. For CUDA ranks that
// share a GPU (NCCL refuses two ranks on one device); slower than NCCL (two PCIe copies and a
// host wait per exchange, a synchronize when its buffers are freed), and its pinned buffers
// count in host_memory(). Broadcasts go through the host too. `backend` must outlive it.
std::unique_ptr<Communicator> make_host_staged_communicator(Backend& backend,
                                                            std::unique_ptr<Communicator> inner);

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
