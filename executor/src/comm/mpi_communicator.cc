// The MPI communicator: host buffers, byte counts as MPI_BYTE. MPI-3 counts are ints, so a
// count or displacement past INT_MAX is refused up front instead of wrapping.
//
// Every blocking call is a nonblocking MPI call polled by the Watchdog (mpi_watchdog.h): a rank
// that dies or fails makes the others throw RankFailure within the timeout instead of hanging
// in MPI_Wait (docs/reliability.md). The all-to-all is point-to-point (what the linear
// MPI_Ialltoallv does), so that a failure can cancel its pending receives.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "comm/mpi_watchdog.h"
#include "muonplan/exec/communicator.h"

namespace muonplan::exec {
namespace {

// Tags of the data communicator's all-to-alls cycle through this many values (MPI
// guarantees tags up to 32767); exchanges in flight at once are far fewer.
constexpr uint64_t kExchangeTags = 32768;

void check_int(std::initializer_list<size_t> values, const char* what, size_t peer) {
  for (size_t v : values) {
    if (v > size_t(INT_MAX)) {
      throw std::runtime_error("MPI all-to-all: " + std::string(what) + " for rank " +
                               std::to_string(peer) + " is " + std::to_string(v) +
                               " bytes, over MPI's int limit (INT_MAX); split the chunk");
    }
  }
}

// An operation in flight: its requests (an all-to-all's receives first, then its sends; one
// request for a collective) and the staging buffer of a reduction or broadcast, which MPI
// writes until the operation completes.
struct Pending {
  std::vector<MPI_Request> reqs;
  size_t receives = 0;      // reqs[0, receives) are point-to-point receives,
  std::vector<int> source;  // from these ranks
  std::vector<char> staging;
  bool active() const {
    for (MPI_Request r : reqs) {
      if (r != MPI_REQUEST_NULL) return true;
    }
    return false;
  }
};

class MpiCommunicator;

// Waits through the communicator's watchdog. After a rank failure the operation can never
// complete: destroying it then abandons it (kept until exit) instead of waiting.
class MpiRequest : public Request {
 public:
  MpiRequest(MpiCommunicator& comm, std::unique_ptr<Pending> op)
      : comm_(comm), op_(std::move(op)) {}
  void wait() override;
  ~MpiRequest() override;

 private:
  MpiCommunicator& comm_;
  std::unique_ptr<Pending> op_;
};

class MpiCommunicator : public Communicator {
 public:
  explicit MpiCommunicator(double timeout_s) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) throw std::logic_error("make_mpi_communicator: MPI is not initialized");
    // A private duplicate, so our error handler and traffic never mix with other MPI users.
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
    watchdog_ = std::make_unique<Watchdog>(comm_, timeout_s);
    set_failure_detector(watchdog_.get());
  }
  ~MpiCommunicator() override {
    const bool failed = watchdog_->failed();
    set_failure_detector(nullptr);
    watchdog_.reset();
    int finalized = 0;
    MPI_Finalized(&finalized);
    // After a failure operations stay in flight on comm_ (abandoned): leave it as it is.
    if (!finalized && !failed) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_size() const override {
    // Ranks that share this node's memory (and so its cores).
    MPI_Comm node;
    int n = 1;
    if (MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
      MPI_Comm_size(node, &n);
      MPI_Comm_free(&node);
    }
    return n;
  }

  void barrier() override {
    auto op = std::make_unique<Pending>();
    op->reqs.assign(1, MPI_REQUEST_NULL);
    check_mpi(MPI_Ibarrier(comm_, &op->reqs[0]), "MPI_Ibarrier");
    complete(std::move(op), "MPI_Ibarrier");
  }

  void broadcast(void* data, size_t bytes, int root) override {
    // In pieces through a staging buffer, kept until exit if a failure abandons the
    // call (MPI may still write it); MPI counts are ints.
    constexpr size_t kPiece = size_t(16) << 20;
    auto* p = static_cast<char*>(data);
    size_t done = 0;
    do {
      const size_t piece = std::min(kPiece, bytes - done);
      auto op = std::make_unique<Pending>();
      op->staging.assign(p + done, p + done + piece);
      op->reqs.assign(1, MPI_REQUEST_NULL);
      check_mpi(MPI_Ibcast(op->staging.data(), static_cast<int>(piece), MPI_BYTE, root, comm_,
                           &op->reqs[0]),
                "MPI_Bcast");
      Pending& kept = complete(std::move(op), "MPI_Bcast");
      std::memcpy(p + done, kept.staging.data(), piece);
      done += piece;
    } while (done < bytes);
  }

  void allreduce_max(double* values, size_t n) override {
    allreduce(values, n, sizeof(double), MPI_DOUBLE, MPI_MAX, "MPI_Allreduce(max)");
  }
  // Unsigned sums wrap modulo 2^64, which is what the digests need.
  void allreduce_sum_u64(uint64_t* values, size_t n) override {
    allreduce(values, n, sizeof(uint64_t), MPI_UINT64_T, MPI_SUM, "MPI_Allreduce(sum)");
  }

  // Polls `op` to completion (mpi_watchdog.h); on a failure the operation is abandoned, kept
  // with its buffers, and the failure thrown. An MPI error that a dead peer explains becomes
  // that rank's RankFailure.
  void wait(Pending& op, const char* call) {
    int rc = MPI_SUCCESS;
    watchdog_->wait(
        [&] {
          int done = 0;
          rc = MPI_Testall(int(op.reqs.size()), op.reqs.data(), &done, MPI_STATUSES_IGNORE);
          return done || rc != MPI_SUCCESS;
        },
        call);
    if (rc != MPI_SUCCESS) {
      watchdog_->check_peers();
      throw std::runtime_error(mpi_error_text(rc, call));
    }
  }
  // An operation that will never complete. Its point-to-point receives not yet matched are
  // cancelled; one already matched gets a second to finish when its sender is alive. The
  // rest, with the staging buffer, stays as it is until exit.
  void abandon(std::unique_ptr<Pending> op) {
    if (!op || !op->active()) return;
    for (size_t i = 0; i < op->receives; ++i) {
      if (op->reqs[i] != MPI_REQUEST_NULL) MPI_Cancel(&op->reqs[i]);
    }
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < op->receives; ++i) {
      int done = 0;
      while (op->reqs[i] != MPI_REQUEST_NULL && !watchdog_->dead(op->source[i]) &&
             MPI_Test(&op->reqs[i], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done &&
             std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1)) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
    keep_until_exit(std::shared_ptr<Pending>(std::move(op)));
  }
  bool failed() const { return watchdog_->failed(); }

 protected:
  void check_limits(const std::vector<size_t>& send_bytes, const std::vector<size_t>& send_displs,
                    const std::vector<size_t>& recv_bytes,
                    const std::vector<size_t>& recv_displs) const override {
    for (size_t p = 0; p < send_bytes.size(); ++p) {
      check_int({send_bytes[p], send_displs[p]}, "send count or displacement", p);
      check_int({recv_bytes[p], recv_displs[p]}, "receive count or displacement", p);
    }
  }

  // Point to point, one message per peer with a non-zero count, like the linear
  // MPI_Ialltoallv: after a rank failure the receives not yet matched can be cancelled, so
  // no late message lands in buffers the caller has freed by then.
  std::unique_ptr<Request> do_ialltoallv(const void* send, const std::vector<size_t>& send_bytes,
                                         const std::vector<size_t>& send_displs, void* recv,
                                         const std::vector<size_t>& recv_bytes,
                                         const std::vector<size_t>& recv_displs) override {
    const size_t n = static_cast<size_t>(size_);
    const int tag = static_cast<int>(exchanges_++ % kExchangeTags);
    auto op = std::make_unique<Pending>();
    auto* out = static_cast<const char*>(send);
    auto* in = static_cast<char*>(recv);
    for (size_t p = 0; p < n; ++p) {
      if (recv_bytes[p] == 0 || int(p) == rank_) continue;
      op->reqs.push_back(MPI_REQUEST_NULL);
      op->source.push_back(int(p));
      check_mpi(MPI_Irecv(in + recv_displs[p], int(recv_bytes[p]), MPI_BYTE, int(p), tag, comm_,
                          &op->reqs.back()),
                "MPI_Irecv");
    }
    op->receives = op->reqs.size();
    for (size_t p = 0; p < n; ++p) {
      if (send_bytes[p] == 0) continue;
      if (int(p) == rank_) {
        std::memcpy(in + recv_displs[p], out + send_displs[p], send_bytes[p]);
        continue;
      }
      op->reqs.push_back(MPI_REQUEST_NULL);
      check_mpi(MPI_Isend(out + send_displs[p], int(send_bytes[p]), MPI_BYTE, int(p), tag, comm_,
                          &op->reqs.back()),
                "MPI_Isend");
    }
    return std::make_unique<MpiRequest>(*this, std::move(op));
  }

 private:
  static int int_count(size_t n) {
    if (n > size_t(INT_MAX)) throw std::runtime_error("MPI all-reduce: too many values");
    return static_cast<int>(n);
  }

  Pending& complete(std::unique_ptr<Pending> op, const char* call) {
    try {
      wait(*op, call);
    } catch (...) {
      abandon(std::move(op));
      throw;
    }
    done_ = std::move(op);
    return *done_;
  }

  void allreduce(void* values, size_t n, size_t elem, MPI_Datatype type, MPI_Op mpi_op,
                 const char* call) {
    auto op = std::make_unique<Pending>();
    const auto* v = static_cast<const char*>(values);
    op->staging.assign(v, v + n * elem);
    op->reqs.assign(1, MPI_REQUEST_NULL);
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, op->staging.data(), int_count(n), type, mpi_op, comm_,
                             &op->reqs[0]),
              call);
    Pending& kept = complete(std::move(op), call);
    std::memcpy(values, kept.staging.data(), n * elem);
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::unique_ptr<Watchdog> watchdog_;
  std::unique_ptr<Pending> done_;  // the last completed blocking call
  uint64_t exchanges_ = 0;         // all-to-alls started: the next one's tag
};

void MpiRequest::wait() {
  if (!op_ || !op_->active()) return;
  try {
    comm_.wait(*op_, "MPI_Ialltoallv");
  } catch (...) {
    // Without a rank failure the exchange can still complete: the destructor waits for it,
    // before the step frees its buffers.
    if (comm_.failed()) comm_.abandon(std::move(op_));
    throw;
  }
}

MpiRequest::~MpiRequest() {
  if (!op_ || !op_->active()) return;
  if (comm_.failed()) {
    comm_.abandon(std::move(op_));
    return;
  }
  try {
    wait();
  } catch (...) {
    // A destructor cannot report it; an explicit wait() would have.
  }
}

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(double timeout_s) {
  return std::make_unique<MpiCommunicator>(timeout_s);
}

MpiSession::MpiSession(int* argc, char*** argv) {
  int provided = 0;
  check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  check_mpi(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  if (provided < MPI_THREAD_FUNNELED) {
    MPI_Finalize();
    throw std::runtime_error("MPI_Init_thread: the MPI library lacks MPI_THREAD_FUNNELED");
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  install_termination_handler(rank);
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  // After a rank failure MPI_Finalize could wait forever for a dead rank; MPI_Abort ends the
  // job, and makes mpirun exit non-zero even where it keeps the job alive on failures.
  if (end_with_abort()) MPI_Abort(MPI_COMM_WORLD, 1);
  MPI_Finalize();
}

}  // namespace muonplan::exec
