// Checkpoints of the full optimizer state, one binary file per rank plus a manifest
// (docs/checkpoint-format.md). Names follow dion's state keys: "<param>/param",
// "<param>/momentum", "<param>/variance" (AdamW), and the group's "step". Each entry keeps its
// dtype, so bf16 momentum stays bf16 across save and load (docs/muon-step.md section 2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "muonplan/exec/communicator.h"

namespace muonplan::exec {

struct CheckpointEntry {
  std::string name;            // e.g. "model.layers.0.mlp.down_proj.weight/momentum"
  std::string dtype;           // "f32" | "bf16"
  std::vector<uint8_t> bytes;  // this rank's slice, little-endian elements
};

struct LoadedCheckpoint {
  int64_t step = 0;                      // the last step the state includes
  std::vector<CheckpointEntry> entries;  // in the order they were saved
};

// Collective over `comm` (every rank calls it with the same dir, step and fingerprint): each
// rank writes DIR.tmp/rank-RRRRR.bin and fsyncs it; then rank 0 writes the manifest and renames
// DIR.tmp to DIR (an existing DIR goes to DIR.old first and is removed after), so a crash at
// any point leaves the old or the new checkpoint loadable. comm == nullptr: a single process
// (world must be 1). Throws std::runtime_error, on every rank, if any rank fails (RankFailure
// if one dies). Every write, fsync and rename is a save point where the test hook
// MUONPLAN_TEST_KILL_SAVE_AT can kill the process (docs/checkpoint-format.md).
void save_checkpoint(const std::string& dir, int rank, int world, int64_t step,
                     const std::string& plan_fingerprint,
                     const std::vector<CheckpointEntry>& entries, Communicator* comm);

// Refuses, with an InputError naming the path, a DIR, DIR.tmp or DIR.old that is not a muonplan
// checkpoint directory (a regular file, a symbolic link, a directory holding anything else):
// a save replaces and removes only its own checkpoints. Call it before the first step.
void check_checkpoint_target(const std::string& dir);

// An advisory lock (flock) on DIR.lock, held from before the first step through the save, so
// two runs cannot write one checkpoint at once: a second run is refused at start with an
// InputError naming the holder's PID. The lock file holds "muonplan checkpoint lock" and the
// holder's PID; it is left in place (removing a locked file would let a third run lock a new
// one), and a DIR.lock that is not such a file is refused rather than overwritten.
class CheckpointLock {
 public:
  explicit CheckpointLock(const std::string& dir);
  ~CheckpointLock();
  CheckpointLock(const CheckpointLock&) = delete;
  CheckpointLock& operator=(const CheckpointLock&) = delete;

 private:
  int fd_ = -1;
};

// This rank's entries. Verifies the manifest's schema, world size and plan fingerprint, and the
// rank file's size and checksum; InputError naming the file otherwise. When DIR has no
// manifest, a save interrupted between its renames is recovered read-only (DIR.tmp with a
// manifest, else DIR.old).
LoadedCheckpoint load_checkpoint(const std::string& dir, int rank, int world,
                                 const std::string& plan_fingerprint);

}  // namespace muonplan::exec
