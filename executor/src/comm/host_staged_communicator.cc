// A communicator whose all-to-alls go through pinned host memory (communicator.h,
// make_host_staged_communicator): device -> pinned -> MPI -> pinned -> device. For ranks that
// share a GPU, where NCCL refuses to run (docs/executor.md, "Multi-rank CUDA on one GPU").
#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "comm/forwarding_communicator.h"
#include "muonplan/exec/backend.h"
#include "muonplan/exec/communicator.h"

namespace muonplan::exec {
namespace {

size_t extent(const std::vector<size_t>& bytes, const std::vector<size_t>& displs) {
  size_t end = 0;
  for (size_t p = 0; p < bytes.size(); ++p) {
    if (bytes[p] > 0) end = std::max(end, displs[p] + bytes[p]);
  }
  return end;
}

// Pinned host memory of the backend, freed (after a synchronize: a copy may still use it) when
// it goes out of scope.
struct Pinned {
  Backend& backend;
  void* ptr;
  Pinned(Backend& b, size_t bytes) : backend(b), ptr(b.alloc_host(bytes)) {}
  ~Pinned() { backend.free_host(ptr); }
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;
};

// The exchange in flight between host buffers; wait() completes it and queues the received
// segments' copies to the device on the current lane, so what that lane runs next sees them.
class StagedRequest : public Request {
 public:
  StagedRequest(Backend& b, std::unique_ptr<Pinned> send, std::unique_ptr<Pinned> recv,
                void* device_recv, std::vector<size_t> recv_bytes, std::vector<size_t> recv_displs)
      : backend_(b),
        send_(std::move(send)),
        recv_(std::move(recv)),
        device_recv_(static_cast<char*>(device_recv)),
        recv_bytes_(std::move(recv_bytes)),
        recv_displs_(std::move(recv_displs)) {}
  void start(std::unique_ptr<Request> inner) { inner_ = std::move(inner); }
  ~StagedRequest() override {
    try {
      wait();
    } catch (...) {
      // A destructor cannot report it; an explicit wait() would have.
    }
  }
  void wait() override {
    if (done_) return;
    done_ = true;
    inner_->wait();
    const char* host = static_cast<const char*>(recv_->ptr);
    for (size_t p = 0; p < recv_bytes_.size(); ++p) {
      if (recv_bytes_[p] == 0) continue;
      backend_.copy_to_device(device_recv_ + recv_displs_[p], host + recv_displs_[p],
                              recv_bytes_[p]);
    }
  }

 private:
  Backend& backend_;
  std::unique_ptr<Pinned> send_, recv_;
  char* device_recv_;
  std::vector<size_t> recv_bytes_, recv_displs_;
  std::unique_ptr<Request> inner_;
  bool done_ = false;
};

class HostStagedCommunicator final : public ForwardingCommunicator {
 public:
  using ForwardingCommunicator::ForwardingCommunicator;
  // `data` may be backend memory: through the host (pageable copies wait for the lane).
  void broadcast(void* data, size_t bytes, int root) override {
    std::vector<char> host(bytes);
    backend_.synchronize();
    backend_.copy_to_host(host.data(), data, bytes);
    inner_->broadcast(host.data(), bytes, root);
    backend_.copy_to_device(data, host.data(), bytes);
  }

 protected:
  std::unique_ptr<Request> do_ialltoallv(const void* send, const std::vector<size_t>& send_bytes,
                                         const std::vector<size_t>& send_displs, void* recv,
                                         const std::vector<size_t>& recv_bytes,
                                         const std::vector<size_t>& recv_displs) override {
    const size_t send_total = extent(send_bytes, send_displs);
    auto send_host = std::make_unique<Pinned>(backend_, send_total);
    auto recv_host = std::make_unique<Pinned>(backend_, extent(recv_bytes, recv_displs));
    // After the current lane's work (it wrote the send buffer), and done before MPI reads it.
    backend_.copy_to_host(send_host->ptr, send, send_total);
    backend_.synchronize_lane();
    void* const send_ptr = send_host->ptr;
    void* const recv_ptr = recv_host->ptr;
    auto request = std::make_unique<StagedRequest>(
        backend_, std::move(send_host), std::move(recv_host), recv, recv_bytes, recv_displs);
    request->start(
        inner_->ialltoallv(send_ptr, send_bytes, send_displs, recv_ptr, recv_bytes, recv_displs));
    return request;
  }
};

}  // namespace

std::unique_ptr<Communicator> make_host_staged_communicator(Backend& backend,
                                                            std::unique_ptr<Communicator> inner) {
  return std::make_unique<HostStagedCommunicator>(backend, std::move(inner));
}

}  // namespace muonplan::exec
