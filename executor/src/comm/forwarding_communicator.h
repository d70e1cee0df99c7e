#pragma once
// A communicator that runs another's collectives, for the wrappers that change only how data
// in backend memory reaches it (host staging, lane ordering): rank, size, barrier and the
// all-reduces go to `inner` as they are, and inner's failure detector is theirs; each wrapper
// says how it broadcasts and exchanges.
#include <cstdint>
#include <memory>
#include <utility>

#include "muonplan/exec/backend.h"
#include "muonplan/exec/communicator.h"

namespace muonplan::exec {

class ForwardingCommunicator : public Communicator {
 public:
  ForwardingCommunicator(Backend& backend, std::unique_ptr<Communicator> inner)
      : backend_(backend), inner_(std::move(inner)) {
    set_failure_detector(failure_detector_of(*inner_));
  }
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  int local_size() const override { return inner_->local_size(); }
  void barrier() override { inner_->barrier(); }
  void allreduce_max(double* values, size_t n) override { inner_->allreduce_max(values, n); }
  void allreduce_sum_u64(uint64_t* values, size_t n) override {
    inner_->allreduce_sum_u64(values, n);
  }

 protected:
  Backend& backend_;
  std::unique_ptr<Communicator> inner_;
};

}  // namespace muonplan::exec
