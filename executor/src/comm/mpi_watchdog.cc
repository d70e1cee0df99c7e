// Failure detection for the MPI communicator (mpi_watchdog.h, docs/reliability.md).
//
// Control messages on the duplicated communicator, all small:
//   probe  (u64 id)  "are you alive?"; answered with a reply carrying the same id
//   reply  (u64 id)
//   notice (i64 origin, i64 step, i64 flags, text): a rank is exiting because `origin` failed
//          at `step`; origin == sender for its own error, another rank for a relayed failure
//          (flag 1: origin stopped responding, so nobody waits for its notice).
#include "comm/mpi_watchdog.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace muonplan::exec {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kProbe = 1, kReply = 2, kNotice = 3;
constexpr int64_t kOriginDead = 1;
constexpr size_t kMaxText = 4000;  // a notice's text is cut to this many bytes

bool g_end_with_abort = false;

// For the SIGTERM handler: lock-free atomics are async-signal-safe.
std::atomic<int64_t> g_step{0};
std::atomic<int> g_rank{-1};
std::atomic<bool> g_reported{false};
std::atomic<bool> g_launched{true};  // started by a launcher (mpirun, mpiexec, srun)
static_assert(std::atomic<int64_t>::is_always_lock_free);

void on_sigterm(int) {
  if (!g_reported.load()) {
    char line[160];
    size_t n = 0;
    auto put_text = [&](const char* s) {
      while (*s && n < sizeof line) line[n++] = *s++;
    };
    auto put_int = [&](int64_t v) {
      char digits[24];
      int k = 0;
      uint64_t u = v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v);
      if (v < 0) put_text("-");
      do {
        digits[k++] = char('0' + u % 10);
        u /= 10;
      } while (u && k < 24);
      while (k && n < sizeof line) line[n++] = digits[--k];
    };
    put_text("muonplan: rank ");
    put_int(g_rank.load());
    put_text(g_launched.load() ? ": terminated by the launcher during step "
                               : ": terminated by SIGTERM (not from a launcher: no mpirun "
                                 "started this process) during step ");
    put_int(g_step.load());
    put_text("\n");
    ssize_t ignored = ::write(2, line, n);
    (void)ignored;
  }
  ::_exit(1);
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Between polls a waiting rank yields its core for the first seconds of a wait, then sleeps
// 1 ms per poll. Yielding, not sleeping, while a transfer may be under way: OpenMPI moves a
// large message only inside MPI calls (no progress thread), one fragment per poll, so a sleep
// between polls caps the all-to-all at a fragment per sleep (measured: ~50 MB/s with 1 ms
// sleeps, against GB/s when polling). Yielding leaves the core to a computing rank on an
// oversubscribed node, as OpenMPI's own waits do there. Long waits (a peer saving a
// checkpoint, or dead) sleep, so they cost no CPU.
class Backoff {
 public:
  void pause() {
    if (Clock::now() - t0_ < std::chrono::seconds(2)) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

 private:
  Clock::time_point t0_ = Clock::now();
};

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", s);
  return buf;
}

template <class T>
void put(std::vector<char>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof v);
  std::memcpy(out.data() + at, &v, sizeof v);
}
template <class T>
T get(const std::vector<char>& in, size_t at) {
  T v{};
  if (at + sizeof v <= in.size()) std::memcpy(&v, in.data() + at, sizeof v);
  return v;
}

}  // namespace

void keep_until_exit(std::shared_ptr<void> what) {
  static auto* kept = new std::vector<std::shared_ptr<void>>;  // never destroyed, on purpose
  kept->push_back(std::move(what));
}

std::string mpi_error_text(int rc, const char* call) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  return std::string(call) +
         " failed: " + (len > 0 ? std::string(text, len) : "error " + std::to_string(rc));
}

void check_mpi(int rc, const char* call) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(mpi_error_text(rc, call));
}

bool end_with_abort() {
  return g_end_with_abort;
}

bool launcher_keeps_job_alive() {
  auto is = [](const char* name, std::initializer_list<const char*> values) {
    const char* v = std::getenv(name);
    if (!v) return false;
    for (const char* x : values) {
      if (std::strcmp(v, x) == 0) return true;
    }
    return false;
  };
  return is("OMPI_MCA_orte_abort_on_non_zero_status", {"0", "false", "no"}) ||
         is("OMPI_MCA_orte_enable_recovery", {"1", "true", "yes"});
}

void install_termination_handler(int rank) {
  g_rank = rank;
  // What a launcher sets in each process it starts (OpenMPI's mpirun, MPICH's hydra, Slurm's
  // srun); a singleton has none (PMIX_RANK appears in a singleton too once MPI_Init ran). A
  // SIGTERM without one came from a user or a timeout, not a launcher ending the job.
  g_launched = std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr ||
               std::getenv("PMI_RANK") != nullptr || std::getenv("SLURM_PROCID") != nullptr;
  struct sigaction sa = {};
  sa.sa_handler = on_sigterm;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
}

Watchdog::Watchdog(MPI_Comm comm, double timeout_s)
    : timeout_s_(timeout_s), probe_window_s_(std::clamp(timeout_s / 8, 1.0, 3.0)) {
  if (!(timeout_s > 0)) throw std::invalid_argument("communicator timeout must be positive");
  check_mpi(MPI_Comm_dup(comm, &ctl_), "MPI_Comm_dup");
  check_mpi(MPI_Comm_set_errhandler(ctl_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_rank(ctl_, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(ctl_, &size_), "MPI_Comm_size");
  reply_id_.assign(size_, 0);
  dead_.assign(size_, false);
  announced_by_.assign(size_, false);
  // Test hook (tests/mpi/rank_failure.sh, checkpoint_safety.sh): RANK:STEP:kill|error|stop[:WAIT].
  if (const char* env = std::getenv("MUONPLAN_TEST_DIE")) {
    char how[16] = {};
    long long step = 0;
    int rank = 0, wait = 0;
    const int n = std::sscanf(env, "%d:%lld:%15[a-z]:%d", &rank, &step, how, &wait);
    const bool kill = std::strcmp(how, "kill") == 0, stop = std::strcmp(how, "stop") == 0;
    if (n >= 3 && (kill || stop || std::strcmp(how, "error") == 0)) {
      hook_ = {rank, step, kill, n == 4 ? wait : 0, stop};
    } else {
      std::fprintf(
          stderr,
          "muonplan: MUONPLAN_TEST_DIE=%s ignored: expected RANK:STEP:kill|error|stop[:WAIT]\n",
          env);
    }
  }
}

Watchdog::~Watchdog() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (failed()) {
    // Sends to failed ranks may never complete: their buffers stay, the control communicator
    // is left to MPI_Abort or MPI_Finalize.
    for (Send& s : sends_) keep_until_exit(std::make_shared<Send>(std::move(s)));
    return;
  }
  const Clock::time_point t0 = Clock::now();
  Backoff backoff;
  while (!sends_.empty() && seconds_since(t0) < 1.0) {
    reap_sends();
    backoff.pause();
  }
  for (Send& s : sends_) {
    MPI_Request_free(&s.req);
    keep_until_exit(std::make_shared<Send>(std::move(s)));  // MPI may still read the buffer
  }
  MPI_Comm_free(&ctl_);
}

void Watchdog::set_step(int64_t step) {
  step_ = step;
  g_step = step;
  waits_in_step_ = 0;
  if (hook_.rank == rank_ && hook_.step == step && hook_.wait == 0) fire_hook();
}

void Watchdog::fire_hook() {
  const std::string where =
      "step " + std::to_string(step_) + (hook_.wait ? ", wait " + std::to_string(hook_.wait) : "");
  if (hook_.kill || hook_.stop) {
    const std::string line = "muonplan: rank " + std::to_string(rank_) +
                             ": test hook: " + (hook_.kill ? "SIGKILL" : "SIGSTOP") + " at " +
                             where + "\n";
    ssize_t ignored = ::write(2, line.data(), line.size());
    (void)ignored;
    // stop: the test sees the line, acts while this rank holds what it holds (its checkpoint
    // lock), then sends SIGCONT; the run goes on.
    std::raise(hook_.kill ? SIGKILL : SIGSTOP);
    return;
  }
  throw std::runtime_error("test hook MUONPLAN_TEST_DIE: rank " + std::to_string(rank_) +
                           " fails at " + where);
}

void Watchdog::send(int to, int tag, std::vector<char> bytes) {
  sends_.emplace_back();
  Send& s = sends_.back();
  s.bytes = std::move(bytes);
  if (MPI_Isend(s.bytes.data(), static_cast<int>(s.bytes.size()), MPI_BYTE, to, tag, ctl_,
                &s.req) != MPI_SUCCESS) {
    sends_.pop_back();  // a peer we cannot reach: it will not answer either
  }
}

void Watchdog::reap_sends() {
  for (auto it = sends_.begin(); it != sends_.end();) {
    int done = 0;
    const int rc = MPI_Test(&it->req, &done, MPI_STATUS_IGNORE);
    it = (done || rc != MPI_SUCCESS) ? sends_.erase(it) : std::next(it);
  }
}

bool Watchdog::service() {
  for (;;) {
    int flag = 0;
    MPI_Message msg;
    MPI_Status st;
    if (MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, ctl_, &flag, &msg, &st) != MPI_SUCCESS || !flag)
      break;
    int count = 0;
    MPI_Get_count(&st, MPI_BYTE, &count);
    std::vector<char> in(static_cast<size_t>(std::max(count, 0)));
    if (MPI_Mrecv(in.data(), count, MPI_BYTE, &msg, MPI_STATUS_IGNORE) != MPI_SUCCESS) continue;
    const int from = st.MPI_SOURCE;
    if (st.MPI_TAG == kProbe) {
      send(from, kReply, std::move(in));
    } else if (st.MPI_TAG == kReply) {
      reply_id_[from] = get<uint64_t>(in, 0);
    } else if (st.MPI_TAG == kNotice) {
      const int64_t origin = get<int64_t>(in, 0), step = get<int64_t>(in, 8);
      const int64_t flags = get<int64_t>(in, 16);
      const std::string text(in.begin() + std::min<size_t>(in.size(), 24), in.end());
      announced_by_[from] = true;
      if ((flags & kOriginDead) && origin >= 0 && origin < size_ && origin != rank_)
        dead_[origin] = true;
      if (!failure_ && !announced_) {
        // A rank's own error is named here; a relayed failure arrives already worded.
        failure_.emplace(static_cast<int>(origin), step,
                         origin == from ? "rank " + std::to_string(origin) + " failed at step " +
                                              std::to_string(step) + ": " + text
                                        : text);
        g_end_with_abort = true;
      }
    }
  }
  return failure_.has_value() && !announced_;
}

void Watchdog::throw_failure() const {
  if (failure_) throw *failure_;
  throw std::runtime_error("the communicator was used after this rank announced its failure");
}

void Watchdog::poll() {
  if (failure_) throw_failure();
  if (service()) throw_failure();
  reap_sends();
}

void Watchdog::wait(const std::function<bool()>& done, const char* call) {
  ++waits_in_step_;
  if (hook_.rank == rank_ && hook_.step == step_ && hook_.wait == waits_in_step_) fire_hook();
  if (failed()) throw_failure();
  Clock::time_point deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double>(timeout_s_));
  bool everyone_answered = false;
  Backoff backoff;
  for (;;) {
    if (done()) return;
    poll();
    if (Clock::now() >= deadline) {
      waited_s_ = timeout_s_;
      check_peers();
      waited_s_ = 0;
      if (everyone_answered) {
        throw std::runtime_error(std::string(call) + " made no progress for " +
                                 seconds_text(2 * timeout_s_) + " s during step " +
                                 std::to_string(step_) +
                                 " although every rank answers (ranks in different collectives?)");
      }
      everyone_answered = true;
      deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(timeout_s_));
    }
    backoff.pause();
  }
}

void Watchdog::check_peers() {
  if (failure_) throw_failure();
  const uint64_t id = ++probe_id_;
  std::vector<char> bytes;
  put(bytes, id);
  for (int p = 0; p < size_; ++p) {
    if (p != rank_ && !dead_[p]) send(p, kProbe, bytes);
  }
  auto silent = [&] {
    std::vector<int> out;
    for (int p = 0; p < size_; ++p) {
      if (p != rank_ && !dead_[p] && reply_id_[p] != id) out.push_back(p);
    }
    return out;
  };
  const Clock::time_point t0 = Clock::now();
  Backoff backoff;
  std::vector<int> quiet = silent();
  while (!quiet.empty() && seconds_since(t0) < probe_window_s_) {
    poll();
    backoff.pause();
    quiet = silent();
  }
  if (quiet.empty()) return;
  for (int p : quiet) dead_[p] = true;
  std::string what = "rank " + std::to_string(quiet[0]) + " stopped responding during step " +
                     std::to_string(step_) + " (no reply to a liveness probe within " +
                     seconds_text(probe_window_s_) + " s";
  if (waited_s_ > 0) what += ", after " + seconds_text(waited_s_) + " s without progress";
  for (size_t i = 1; i < quiet.size(); ++i) {
    what += (i == 1 ? "; nor from rank " : ", ") + std::to_string(quiet[i]);
  }
  failure_.emplace(quiet[0], step_, what + ")");
  g_end_with_abort = true;
  throw *failure_;
}

void Watchdog::announce_failure(const std::string& what) noexcept {
  if (announced_) return;
  g_reported = true;  // the caller has printed this rank's line: a SIGTERM now exits quietly
  try {
    g_end_with_abort = true;  // until the decision below
    service();
    announced_ = true;
    std::vector<char> notice;
    const bool relay = failure_.has_value();
    const int origin = relay ? failure_->failed_rank : rank_;
    put<int64_t>(notice, origin);
    put<int64_t>(notice, relay ? failure_->step : step_);
    put<int64_t>(notice, relay && origin != rank_ && dead_[origin] ? kOriginDead : 0);
    const std::string text = relay ? std::string(failure_->what()) : what;
    notice.insert(notice.end(), text.begin(), text.begin() + std::min(text.size(), kMaxText));
    for (int p = 0; p < size_; ++p) {
      if (p != rank_ && !dead_[p]) send(p, kNotice, notice);
    }
    // Every rank prints its line before any leaves: a rank that exits early can make mpirun
    // kill the others before they read the notice. Wait for each live rank's own notice.
    auto all_heard = [&] {
      for (int p = 0; p < size_; ++p) {
        if (p != rank_ && !dead_[p] && !announced_by_[p]) return false;
      }
      return true;
    };
    const Clock::time_point t0 = Clock::now();
    Backoff backoff;
    while (!(all_heard() && sends_.empty()) && seconds_since(t0) < timeout_s_) {
      service();
      reap_sends();
      backoff.pause();
    }
    // MPI_Finalize is safe only when every rank is alive and leaving too. MPI_Abort is also
    // what makes mpirun exit non-zero where it was told to keep the job alive on failures.
    bool any_dead = false;
    for (int p = 0; p < size_; ++p) any_dead = any_dead || dead_[p];
    g_end_with_abort = any_dead || !all_heard() || launcher_keeps_job_alive();
  } catch (...) {
    g_end_with_abort = true;
  }
}

}  // namespace muonplan::exec
