// The checkpoint side of `muonplan execute` (execute.cc): the lock, the resume and the save's
// entries. Internal to the executor.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "muonplan/exec/checkpoint.h"
#include "muonplan/exec/communicator.h"
#include "muonplan/exec/execute.h"
#include "muonplan/exec/rank_state.h"

namespace muonplan::exec {

// What a resume loaded: the step, and the directory it came from (DIR, or DIR.tmp / DIR.old
// when a save was interrupted between its renames).
struct Resumed {
  int64_t step = 0;
  std::string dir;
};

// Before anything runs: no other run may be writing opt.checkpoint_dir, and it must be ours to
// replace. Collective; rank 0 holds the lock.
std::unique_ptr<CheckpointLock> lock_checkpoint(const ExecuteOptions& opt, Communicator& comm);

// Loads opt.resume_dir into this rank's state, every rank agreeing on any rank's failure.
// Collective.
Resumed resume_on_every_rank(RankState& state, const ExecuteOptions& opt, int world,
                             Communicator& comm);

// This rank's entries for a checkpoint of its state.
std::vector<CheckpointEntry> snapshot(const RankState& state);

}  // namespace muonplan::exec
