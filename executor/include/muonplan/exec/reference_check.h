// `execute --check-reference` (docs/executor-numerics.md, "The independent reference"): the
// sharded state after the run against (a) the same steps of MuonStep on one rank with whole
// matrices, which must match bit for bit on the CPU backends (sharding changes no bits), and
// (b) the independent ReferenceStep (reference_step.h), which must match within
// reference_rel_bound (the algorithm is the documented one).
#pragma once

#include <cstdint>
#include <string>

#include "muonplan/exec/backend.h"
#include "muonplan/exec/communicator.h"
#include "muonplan/exec/execute.h"
#include "muonplan/exec/metrics.h"
#include "muonplan/exec/rank_state.h"
#include "muonplan/exec/reference_step.h"
#include "muonplan/planfile/plan_file.h"

namespace muonplan::exec {

// How far this rank's state is from a recomputation: the largest element difference of any
// field (weights, momentum, AdamW variance), and the largest relative Frobenius difference of a
// tensor's field, the weights taken as their change since initialization (the moments start at
// 0). Non-finite values are left out of both and named in `nonfinite`.
struct StateDiff {
  double max_abs = 0;
  double rel = 0;
  std::string nonfinite;  // the first tensor holding a NaN or Inf on either side
};
// This rank's shards against the same tensors of a one-rank run (`one`: whole tensors).
StateDiff diff_against_one_rank(const RankState& state, const RankState& one);
// This rank's shards against the independent reference.
StateDiff diff_against_reference(const RankState& state, const ReferenceStep& ref);

// Recomputes steps 1..last both ways (the step `options.inject_nonfinite_step` skipped, as the
// run skipped it), compares on every rank, fills measured's one_rank_* and reference_* figures
// (max over ranks) and throws std::runtime_error when either check fails or a value is not
// finite. Collective.
void check_reference(const Plan& plan, const ExecuteOptions& options, const RankState& state,
                     Backend& backend, Communicator& comm, int64_t last, Measured& measured);

}  // namespace muonplan::exec
