// A host communicator ordered like NCCL on the backend's lanes (cpu_async_backend.h): what lets
// the asynchronous CPU backend run multi-rank steps over MPI.
#include <memory>
#include <utility>

#include "comm/forwarding_communicator.h"
#include "muonplan/exec/cpu_async_backend.h"

namespace muonplan::exec {
namespace {

class LaneOrderedCommunicator final : public ForwardingCommunicator {
 public:
  using ForwardingCommunicator::ForwardingCommunicator;
  void broadcast(void* data, size_t bytes, int root) override {
    backend_.synchronize();  // `data` may be backend memory a lane still writes
    inner_->broadcast(data, bytes, root);
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
};

}  // namespace

std::unique_ptr<Communicator> make_lane_ordered_communicator(Backend& backend,
                                                             std::unique_ptr<Communicator> inner) {
  return std::make_unique<LaneOrderedCommunicator>(backend, std::move(inner));
}

}  // namespace muonplan::exec
