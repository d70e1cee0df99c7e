// The MPI communicator: host buffers, byte counts as MPI_BYTE. MPI-3 counts are ints, so a
// count or displacement past INT_MAX is refused up front instead of wrapping.
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>

#include "muonplan/exec/communicator.h"

namespace muonplan::exec {
namespace {

// Errors return (MPI_ERRORS_RETURN) and become exceptions carrying MPI's own text.
void check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  throw std::runtime_error(std::string(call) + " failed: " +
                           (len > 0 ? std::string(text, len) : "error " + std::to_string(rc)));
}

std::vector<int> to_int(const std::vector<size_t>& v, const char* what) {
  std::vector<int> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] > size_t(INT_MAX)) {
      throw std::runtime_error("MPI all-to-all: " + std::string(what) + " for rank " +
                               std::to_string(i) + " is " + std::to_string(v[i]) +
                               " bytes, over MPI's int limit (INT_MAX); split the chunk");
    }
    out[i] = static_cast<int>(v[i]);
  }
  return out;
}

// Owns the int count arrays: MPI reads them until the operation completes.
class MpiRequest : public Request {
 public:
  std::vector<int> counts[4];
  MPI_Request req = MPI_REQUEST_NULL;

  void wait() override {
    if (req != MPI_REQUEST_NULL) check(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait");
  }
  ~MpiRequest() override {
    try {
      wait();
    } catch (...) {
      // A destructor cannot report it; an explicit wait() would have.
    }
  }
};

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) throw std::logic_error("make_mpi_communicator: MPI is not initialized");
    // A private duplicate, so our error handler and traffic never mix with other MPI users.
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
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

  std::unique_ptr<Request> ialltoallv(const void* send, const std::vector<size_t>& send_bytes,
                                      const std::vector<size_t>& send_displs, void* recv,
                                      const std::vector<size_t>& recv_bytes,
                                      const std::vector<size_t>& recv_displs) override {
    const size_t n = static_cast<size_t>(size_);
    if (send_bytes.size() != n || send_displs.size() != n || recv_bytes.size() != n ||
        recv_displs.size() != n) {
      throw std::invalid_argument(
          "MPI all-to-all: counts and displacements need one entry per "
          "rank (" +
          std::to_string(n) + ")");
    }
    auto r = std::make_unique<MpiRequest>();
    r->counts[0] = to_int(send_bytes, "send count");
    r->counts[1] = to_int(send_displs, "send displacement");
    r->counts[2] = to_int(recv_bytes, "receive count");
    r->counts[3] = to_int(recv_displs, "receive displacement");
    check(MPI_Ialltoallv(send, r->counts[0].data(), r->counts[1].data(), MPI_BYTE, recv,
                         r->counts[2].data(), r->counts[3].data(), MPI_BYTE, comm_, &r->req),
          "MPI_Ialltoallv");
    for (size_t p = 0; p < n; ++p) {
      if (int(p) != rank_) sent_bytes_ += send_bytes[p];
    }
    return r;
  }

  void barrier() override { check(MPI_Barrier(comm_), "MPI_Barrier"); }

  void broadcast(void* data, size_t bytes, int root) override {
    // In pieces of at most 1 GiB: MPI counts are ints.
    constexpr size_t kPiece = size_t(1) << 30;
    auto* p = static_cast<char*>(data);
    size_t done = 0;
    do {
      const size_t piece = std::min(kPiece, bytes - done);
      check(MPI_Bcast(p + done, static_cast<int>(piece), MPI_BYTE, root, comm_), "MPI_Bcast");
      done += piece;
    } while (done < bytes);
  }

  void allreduce_max(double* values, size_t n) override {
    check(MPI_Allreduce(MPI_IN_PLACE, values, int_count(n), MPI_DOUBLE, MPI_MAX, comm_),
          "MPI_Allreduce(max)");
  }
  // Unsigned sums wrap modulo 2^64, which is what the digests need.
  void allreduce_sum_u64(uint64_t* values, size_t n) override {
    check(MPI_Allreduce(MPI_IN_PLACE, values, int_count(n), MPI_UINT64_T, MPI_SUM, comm_),
          "MPI_Allreduce(sum)");
  }

  uint64_t alltoall_bytes_sent() const override { return sent_bytes_; }
  void reset_counters() override { sent_bytes_ = 0; }

 private:
  static int int_count(size_t n) {
    if (n > size_t(INT_MAX)) throw std::runtime_error("MPI all-reduce: too many values");
    return static_cast<int>(n);
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  uint64_t sent_bytes_ = 0;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator() {
  return std::make_unique<MpiCommunicator>();
}

MpiSession::MpiSession(int* argc, char*** argv) {
  int provided = 0;
  check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  if (provided < MPI_THREAD_FUNNELED) {
    MPI_Finalize();
    throw std::runtime_error("MPI_Init_thread: the MPI library lacks MPI_THREAD_FUNNELED");
  }
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace muonplan::exec
