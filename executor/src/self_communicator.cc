// The one-rank communicator: what an all-to-all leaves behind when the world is one process.
#include <stdexcept>

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
  std::unique_ptr<Request> ialltoallv(const void* send, const std::vector<size_t>& send_bytes,
                                      const std::vector<size_t>& send_displs, void* recv,
                                      const std::vector<size_t>& recv_bytes,
                                      const std::vector<size_t>& recv_displs) override {
    if (send_bytes.size() != 1 || recv_bytes.size() != 1 || send_bytes[0] != recv_bytes[0]) {
      throw std::invalid_argument("self communicator: counts must describe one rank");
    }
    if (send_bytes[0] > 0) {
      backend_.copy(static_cast<char*>(recv) + recv_displs[0],
                    static_cast<const char*>(send) + send_displs[0], send_bytes[0]);
    }
    return std::make_unique<Done>();
  }
  void barrier() override {}
  void broadcast(void*, size_t, int) override {}
  void allreduce_max(double*, size_t) override {}
  void allreduce_sum_u64(uint64_t*, size_t) override {}
  uint64_t alltoall_bytes_sent() const override { return 0; }
  void reset_counters() override {}

 private:
  Backend& backend_;
};

}  // namespace

std::unique_ptr<Communicator> make_self_communicator(Backend& backend) {
  return std::make_unique<SelfCommunicator>(backend);
}

}  // namespace muonplan::exec
