// The step's buffers and state bytes (planfile's step_buffers.h): worked values of the one
// definition, and the planner's prediction equal to what the executor allocates from it, on
// every rank of a three-rank plan, without MPI (a communicator that moves nothing: the step
// allocates the same buffers whatever the exchanges carry). What a rank keeps between steps is
// checked against the step timeline's tensors (step_timeline.h), the planner's one description
// of them.
#include <catch2/catch.hpp>
#include <memory>
#include <vector>

#include "cost/step_timeline.h"
#include "muonplan/exec/communicator.h"
#include "muonplan/exec/rank_state.h"
#include "muonplan/exec/step.h"
#include "muonplan/planfile/step_buffers.h"
#include "test_plans.h"

using namespace muonplan;
using namespace muonplan::exec;

TEST_CASE("the step's buffers and state bytes have their worked values", "[step_buffers]") {
  // Muon momentum is 4 or 2 bytes; AdamW keeps two fp32 moments with --bf16-momentum too.
  CHECK(state_elem_bytes(true, false).total() == 4);
  CHECK(state_elem_bytes(true, true).total() == 2);
  CHECK(state_elem_bytes(true, true).variance == 0);
  CHECK(state_elem_bytes(false, true).momentum == 4);
  CHECK(state_elem_bytes(false, true).variance == 4);
  // 10 elements of my slices out and back (bf16), a 4 x 8 matrix gathered on its owner.
  const BatchBuffers owner = batch_buffers(10, true, 4, 8);
  CHECK(owner.send == 20);
  CHECK(owner.recv == 20);
  CHECK(owner.gathered == 64);
  CHECK(batch_buffers(10, false, 4, 8).total() == 40);
  CHECK(local_chunk_bytes(3, 4, 8) == 192);
  CHECK(staged_state(false, true, 5).total() == 40);
  CHECK(staged_state(true, true, 5).total() == 10);
  // The non-finite check: one fp32 sum per chunk and per tensor.
  CHECK(nonfinite_check_bytes(3, 5) == 32);
  CHECK(nonfinite_check_bytes(0, 0) == 0);
}

namespace {

struct Done : Request {
  void wait() override {}
};

// Rank `rank` of `size`, whose exchanges complete at once and move nothing.
class SilentCommunicator : public Communicator {
 public:
  SilentCommunicator(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void barrier() override {}
  void broadcast(void*, size_t, int) override {}
  void allreduce_max(double*, size_t) override {}
  void allreduce_sum_u64(uint64_t*, size_t) override {}

 protected:
  std::unique_ptr<Request> do_ialltoallv(const void*, const std::vector<size_t>&,
                                         const std::vector<size_t>&, void*,
                                         const std::vector<size_t>&,
                                         const std::vector<size_t>&) override {
    return std::make_unique<Done>();
  }

 private:
  int rank_, size_;
};

struct RankBytes {
  size_t persistent = 0, transient = 0;  // device bytes between steps, and a step's peak above
  double predicted_persistent = 0;       // the step timeline's peak for the rank, no step buffers
};

RankBytes measure(const Plan& plan, const ModelSpec& spec, int rank) {
  std::unique_ptr<Backend> backend = make_cpu_backend();
  RankState state(plan, *backend, rank);
  RankBytes b;
  b.persistent = backend->memory().current_bytes;
  // The executor's optimizer step (no foreach temporaries) with no buffers: its peak is the
  // parameters, gradients and optimizer state the timeline allocates for this rank.
  TimelineInputs in;
  in.adamw_foreach_temporaries = false;
  in.peak_rank = rank;
  b.predicted_persistent = double(
      live_peak(build_step_timeline(spec, plan.inventory, plan.options, plan.chunks, in)).bytes);
  SilentCommunicator comm(rank, plan.world);
  MuonStep step(state, comm);
  state.load_grads(1);
  backend->reset_peak();
  step.run(1);
  b.transient = backend->memory().peak_bytes - b.persistent;
  return b;
}

}  // namespace

// Each model meets every mode, and each mode both momentum types (once per model).
struct Config {
  const char* model;
  OffloadMode mode;
  OffloadStaging staging;
  bool bf16_momentum;
};
constexpr Config kConfigs[] = {
    {"tiny-dense", OffloadMode::none, OffloadStaging::whole, false},
    {"tiny-dense", OffloadMode::optimizer, OffloadStaging::whole, true},
    {"tiny-dense", OffloadMode::optimizer, OffloadStaging::chunked, false},
    {"tiny-dense", OffloadMode::full, OffloadStaging::whole, true},
    {"tiny-moe", OffloadMode::none, OffloadStaging::whole, true},
    {"tiny-moe", OffloadMode::optimizer, OffloadStaging::whole, false},
    {"tiny-moe", OffloadMode::optimizer, OffloadStaging::chunked, true},
    {"tiny-moe", OffloadMode::full, OffloadStaging::whole, false},
};

TEST_CASE("the planner's GPU bytes are the step's allocations, on every rank", "[step_buffers]") {
  for (const Config& c : kConfigs) {
    PlanRequest r;
    r.options.nodes = 1;
    r.options.gpus_per_node = 3;
    r.options.offload = c.mode;
    r.options.optimizer_staging = c.staging;
    r.options.bf16_momentum = c.bf16_momentum;
    const Plan plan = make_plan(test::model(c.model), test::topology("cpu-ci"), r);
    INFO(c.model << " " << to_string(c.mode) << " " << to_string(c.staging)
                 << (c.bf16_momentum ? " bf16 momentum" : ""));
    REQUIRE(plan.world == 3);
    // The prediction is the peak rank's (ties: the larger transient), as execute reports.
    size_t peak = 0, transient = 0;
    for (int rank = 0; rank < plan.world; ++rank) {
      const RankBytes b = measure(plan, test::model(c.model), rank);
      CHECK(double(b.persistent) == b.predicted_persistent);
      const size_t pk = b.persistent + b.transient;
      if (pk > peak || (pk == peak && b.transient > transient)) {
        peak = pk;
        transient = b.transient;
      }
    }
    const Prediction& p = plan.predicted;
    CHECK(double(transient) == sum(p.gpu_transient_bytes));
    CHECK(double(peak) == sum(p.gpu_persistent_bytes) + sum(p.gpu_transient_bytes));
  }
}
