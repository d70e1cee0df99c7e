// A host communicator ordered like NCCL on the backend's lanes (cpu_async_backend.h): what lets
// the asynchronous CPU backend run multi-rank steps over MPI.
#include <memory>
#include <utility>

#include "muonplan/exec/cpu_async_backend.h"

namespace muonplan::exec {
namespace {

class LaneOrderedCommunicator final : public Communicator {
 public:
  LaneOrderedCommunicator(Backend& backend, std::unique_ptr<Communicator> inner)
      : backend_(backend), inner_(std::move(inner)) {
    set_failure_detector(failure_detector_of(*inner_));
  }
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  int local_size() const override { return inner_->local_size(); }
  void barrier() override { inner_->barrier(); }
  void broadcast(void* data, size_t bytes, int root) override {
    backend_.synchronize();  // `data` may be backend memory a lane still writes
    inner_->broadcast(data, bytes, root);
  }
  void allreduce_max(double* values, size_t n) override { inner_->allreduce_max(values, n); }
  void allreduce_sum_u64(uint64_t* values, size_t n) override {
    inner_->allreduce_sum_u64(values, n);
  }

 protected:
  // MPI reads the send buffer and writes the receive buffer from the host thread: both must be
  // done with the current lane's work first (the fills, the zero-fill of the receive buffer).
  // wait() returns with the data in place, so operations queued after it see it.
  std::unique_ptr<Request> do_ialltoallv(const void* send, const std::vector<size_t>& send_bytes,
                                         const std::vector<size_t>& send_displs, void* recv,
                                         const std::vector<size_t>& recv_bytes,
                                         const std::vector<size_t>& recv_displs) override {
    backend_.synchronize_lane();
    return inner_->ialltoallv(send, send_bytes, send_displs, recv, recv_bytes, recv_displs);
  }

 private:
  Backend& backend_;
  std::unique_ptr<Communicator> inner_;
};

}  // namespace

std::unique_ptr<Communicator> make_lane_ordered_communicator(Backend& backend,
                                                             std::unique_ptr<Communicator> inner) {
  return std::make_unique<LaneOrderedCommunicator>(backend, std::move(inner));
}

}  // namespace muonplan::exec
