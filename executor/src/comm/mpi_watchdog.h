// The MPI communicator's failure detection (docs/reliability.md): a private control
// communicator beside the data one, for failure notices and liveness probes, and the polled
// wait every blocking MPI call goes through. Single-threaded (MPI_THREAD_FUNNELED): control
// traffic is serviced only while this rank waits, so a rank is answered within a poll interval
// when it waits and not at all while it computes.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "muonplan/exec/communicator.h"

namespace muonplan::exec {

// Keeps `what` alive until the process exits: buffers of MPI operations that a failure left
// unfinished (MPI may still read or write them). Reachable from a global, so leak checkers
// do not count them.
void keep_until_exit(std::shared_ptr<void> what);

// MPI's own text for an MPI error code, after `call`.
std::string mpi_error_text(int rc, const char* call);
// Throws std::runtime_error with mpi_error_text unless rc is MPI_SUCCESS.
void check_mpi(int rc, const char* call);

// The MPI communicator's FailureDetector (communicator.h), and the NCCL communicator's through
// it.
class Watchdog final : public FailureDetector {
 public:
  // Duplicates `comm` for control traffic. timeout_s: a wait without completion for this long
  // probes every rank (check_peers).
  Watchdog(MPI_Comm comm, double timeout_s);
  ~Watchdog() override;
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void set_step(int64_t step) override;
  int64_t step() const { return step_; }
  double timeout_s() const { return timeout_s_; }
  // How long check_peers waits for replies to its probes.
  double probe_window_s() const { return probe_window_s_; }

  // Calls `done` (an MPI_Test) until it returns true, servicing control traffic between calls
  // and sleeping 100 us to 1 ms once the wait is not immediate. Past the timeout, probes every
  // rank (check_peers); a second timeout with every rank answering is a stuck collective and
  // throws std::runtime_error naming `call`. Throws RankFailure when a peer failed.
  void wait(const std::function<bool()>& done, const char* call);

  // Communicator::poll, check_peers and announce_failure (communicator.h).
  void poll() override;
  void check_peers() override;
  void announce_failure(const std::string& what) noexcept override;

  // After a RankFailure (thrown here, or announced), waits must not block: a pending request
  // would never complete. Requests are then abandoned instead of waited for.
  bool failed() const { return failure_.has_value() || announced_; }
  // `rank` did not answer a probe (here or, as a relayed notice says, at another rank).
  bool dead(int rank) const { return dead_[rank]; }

 private:
  struct Send {
    MPI_Request req = MPI_REQUEST_NULL;
    std::vector<char> bytes;
  };
  void send(int to, int tag, std::vector<char> bytes);
  void reap_sends();
  // Receives every pending control message; returns true when a failure notice arrived.
  bool service();
  [[noreturn]] void throw_failure() const;
  void test_hook_on_wait();

  MPI_Comm ctl_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  double timeout_s_, probe_window_s_;
  int64_t step_ = 0;
  int waits_in_step_ = 0;
  double waited_s_ = 0;  // for check_peers' message: how long the wait went without progress
  std::list<Send> sends_;
  uint64_t probe_id_ = 0;
  std::vector<uint64_t> reply_id_;  // per rank: the id of its last reply
  std::vector<bool> dead_;          // did not answer a probe
  std::vector<bool> announced_by_;  // sent a failure notice
  std::optional<RankFailure> failure_;
  bool announced_ = false;
  // MUONPLAN_TEST_DIE=RANK:STEP:kill|error|stop[:WAIT]
  struct DieHook {
    int rank = -1;
    int64_t step = -1;
    bool kill = false;
    int wait = 0;       // 0: in set_step; n: at the start of the step's n-th wait
    bool stop = false;  // SIGSTOP, and go on after SIGCONT
  } hook_;
  void fire_hook();
};

// Whether MpiSession ends the job with MPI_Abort rather than MPI_Finalize, decided by
// announce_failure (and set by any RankFailure): MPI_Finalize would wait forever for a dead
// rank, or for one that never announced; and where mpirun keeps the job alive on failures
// (launcher_keeps_job_alive) only MPI_Abort makes it exit non-zero, and not hang after a rank
// died (docs/reliability.md).
bool end_with_abort();
// mpirun was started with `--mca orte_abort_on_non_zero_status 0` or `--enable-recovery`
// (OpenMPI passes both to the ranks as OMPI_MCA_* environment variables).
bool launcher_keeps_job_alive();

// SIGTERM (mpirun tearing the job down, as it does by default when a rank dies) prints
// "muonplan: rank R: terminated by the launcher during step S" with async-signal-safe calls
// and exits 1; silently once this rank has announced its own failure line.
void install_termination_handler(int rank);

}  // namespace muonplan::exec
