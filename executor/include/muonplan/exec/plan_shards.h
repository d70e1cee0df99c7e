// Which rows of each tensor a rank of a Plan holds, and the plan's identity. One definition
// for the rank state (what a rank allocates), the checkpoint writer (where a shard sits) and
// the Python converter (how to cut whole tensors for a plan), so the three cannot disagree.
#pragma once

#include <cstdint>
#include <string>

#include "muonplan/planfile/plan_file.h"

namespace muonplan::exec {

// One rank's shard of one tensor: entries [begin, end) of dim 0 (rows; whole experts for an
// expert stack), each `row_elems` long, contiguous in row-major order.
struct ShardRange {
  int64_t begin = 0, end = 0;
  int64_t row_elems = 1;
  // Whether this rank's copy is the one that counts: replicas (HSDP groups, a replicated
  // tensor) hold the same rows, and only the first replica's are digested and checkpointed.
  bool primary = true;

  int64_t rows() const { return end - begin; }
  int64_t elems() const { return rows() * row_elems; }
};

// The shard of plan.inventory.tensors[tensor] on `rank` (as planner's place(): docs/
// checkpoint-format.md, "Where each shard sits in the whole tensor").
ShardRange shard_of(const Plan& plan, int tensor, int rank);

// The plan's identity: a hash of its layout, world, momentum dtype and tensors. A checkpoint
// records the fingerprint of the plan that wrote it; legacy checkpoints load only into it.
std::string plan_fingerprint(const Plan& plan);

}  // namespace muonplan::exec
