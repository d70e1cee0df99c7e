// The one-rank communicator: what an all-to-all leaves behind when the world is one process.
#include "muonplan/exec/backend.h"
#include "muonplan/exec/communicator.h"

namespace muonplan::exec {
namespace {

class Done : public Request {
 public:
  void wait() override {}
};

class SelfCommunicator : public Communicator {
 public:
  explicit SelfCommunicator(Backend& backend) : backend_(backend) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void barrier() override {}
  void broadcast(void*, size_t, int) override {}
  void allreduce_max(double*, size_t) override {}
  void allreduce_sum_u64(uint64_t*, size_t) override {}

 protected:
  // Nothing goes to another rank, so the byte counter stays 0; no peer can fail, so there is no
  // failure detector.
  std::unique_ptr<Request> do_ialltoallv(const void* send, const std::vector<size_t>& send_bytes,
                                         const std::vector<size_t>& send_displs, void* recv,
                                         const std::vector<size_t>& /*recv_bytes*/,
                                         const std::vector<size_t>& recv_displs) override {
    if (send_bytes[0] > 0) {
      backend_.copy(static_cast<char*>(recv) + recv_displs[0],
                    static_cast<const char*>(send) + send_displs[0], send_bytes[0]);
    }
    return std::make_unique<Done>();
  }

 private:
  Backend& backend_;
};

}  // namespace

std::unique_ptr<Communicator> make_self_communicator(Backend& backend) {
  return std::make_unique<SelfCommunicator>(backend);
}

}  // namespace muonplan::exec
