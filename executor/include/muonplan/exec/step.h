// The sharded Muon step (muon-step.md sections 2-4), written once for every backend and
// communicator: momentum on each rank's shards, the all-to-all of each batch to its owners,
// Newton-Schulz on the owner, the all-to-all back, the scaled update with decoupled weight
// decay; local NS for expert stacks and replicated matrices; AdamW for the rest. Up to the
// plan's batches_in_flight batches are between their exchanges at once, so one batch's
// communication overlaps another's NS.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>

#include "muonplan/exec/communicator.h"
#include "muonplan/exec/rank_state.h"

namespace muonplan::exec {

class MuonStep {
 public:
  MuonStep(RankState& state, Communicator& comm);
  ~MuonStep();

  // One optimizer step over every chunk of the plan with the gradients in state. `step` is
  // 1-based (AdamW bias correction).
  void run(int64_t step);

 private:
  struct Flight;
  std::unique_ptr<Flight> start_batch(const Chunk& chunk);
  void orthogonalize(Flight& f);
  void finish(Flight& f);
  void local_chunk(const Chunk& chunk);
  void adamw_group(int64_t step);
  float update_scale(int64_t rows, int64_t cols) const;

  RankState& state_;
  Communicator& comm_;
  Backend& backend_;
};

}  // namespace muonplan::exec
