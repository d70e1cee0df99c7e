// Checkpoints of the full optimizer state (docs/checkpoint-format.md): one safetensors file per
// rank, holding the rows of each tensor that rank is the primary holder of, plus a manifest.
// Names follow dion's state keys: "<param>/param", "<param>/momentum", "<param>/variance"
// (AdamW), and the group's "step". Every shard says where it sits in the whole tensor, so a
// checkpoint loads into any plan of the same model: another world size, layout, offload mode,
// or bf16 momentum where it was fp32.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "muonplan/exec/communicator.h"
#include "muonplan/planfile/plan_file.h"

namespace muonplan::exec {

// One tensor of the model, as the manifest lists it.
struct CheckpointTensor {
  std::string name;
  std::vector<int64_t> shape;  // the whole tensor's
  std::string rule;            // "muon" | "adamw": which state entries it has
  bool stack = false;          // an expert stack: dim 0 counts experts
};

// What a checkpoint records of the plan that wrote it. Only `tensors` (the model) decides where
// it loads; the rest says where it came from.
struct CheckpointPlanInfo {
  std::string fingerprint;  // plan_fingerprint (plan_shards.h)
  std::string layout;       // "fsdp=F,cp=C,ep=E"
  std::string offload;
  bool bf16_momentum = false;
  std::vector<CheckpointTensor> tensors;  // in the plan's order
};
CheckpointPlanInfo checkpoint_plan_info(const Plan& plan);

// One shard: rows [begin, end) of dim 0 of the tensor the name's prefix names (whole experts
// for a stack), row-major, little-endian.
struct CheckpointEntry {
  std::string name;   // e.g. "model.layers.0.mlp.down_proj.weight/momentum"
  std::string dtype;  // "f32" | "bf16"
  int64_t begin = 0, end = 0;
  std::vector<uint8_t> bytes;
};

// The highest step a checkpoint may hold, a run may reach, and the manifest, `write_checkpoint`
// and `execute --steps` after a resume accept: 10^15 steps, far beyond any training run, keeps
// step + --steps (at most 10^9) far from int64's end (2^63-1 wrapped to a negative step).
constexpr int64_t kMaxCheckpointStep = 1'000'000'000'000'000;
// "" when a checkpoint may hold `step`, else why: checkpoint_step_message(step as text), the
// one message the manifest reader, write_whole_checkpoint and `execute --steps` give.
std::string checkpoint_step_fault(int64_t step);
std::string checkpoint_step_message(const std::string& shown);  // "expected an integer in ..."

// Collective over `comm` (every rank calls it with the same dir, step and info): each rank
// writes DIR.tmp/rank-RRRRR.safetensors holding `entries` and fsyncs it; then rank 0 writes the
// manifest and renames DIR.tmp to DIR (an existing DIR goes to DIR.old first and is removed
// after), so a crash at any point leaves the old or the new checkpoint loadable. comm ==
// nullptr: a single process (world must be 1). Throws std::runtime_error, on every rank, if any
// rank fails (RankFailure if one dies). Every write, fsync and rename is a save point where the
// test hook MUONPLAN_TEST_KILL_SAVE_AT can kill the process (docs/checkpoint-format.md).
void save_checkpoint(const std::string& dir, int rank, int world, int64_t step,
                     const CheckpointPlanInfo& info, const std::vector<CheckpointEntry>& entries,
                     Communicator* comm);

// The same from one process that holds every rank's entries (per_rank[r] for rank r), for
// converters: takes DIR.lock and refuses a DIR that is not ours, as `execute` does.
void save_checkpoint_all(const std::string& dir, int64_t step, const CheckpointPlanInfo& info,
                         const std::vector<std::vector<CheckpointEntry>>& per_rank);

// Takes the checkpoint for one run, before its first step: an advisory lock (flock) on
// DIR.lock, held through the save, so two runs cannot write one checkpoint at once (a second
// run is refused with an InputError naming the holder's PID); then, under the lock, refuses
// with an InputError naming the path a DIR, DIR.tmp or DIR.old that is not a muonplan
// checkpoint directory (a regular file, a symbolic link, a directory holding anything else):
// a save replaces and removes only its own checkpoints. The check runs under the lock because a
// save in progress changes DIR.tmp while it is looked at. The lock file holds "muonplan
// checkpoint lock" and the holder's PID; it is left in place after a run (removing a locked file
// would let a third run lock a new one) but removed again when this constructor created it and
// then refused the target, so a refused run leaves nothing behind. A DIR.lock that is not such
// a file is refused rather than overwritten.
class CheckpointLock {
 public:
  explicit CheckpointLock(const std::string& dir);
  ~CheckpointLock();
  CheckpointLock(const CheckpointLock&) = delete;
  CheckpointLock& operator=(const CheckpointLock&) = delete;

 private:
  int fd_ = -1;
};

// A failed load of DIR while another run holds DIR.lock (from before its first step through its
// save) may be that run's save replacing the files as they were read: `e`, saying so and naming
// the holder, instead of calling a healthy checkpoint damaged. `e` itself when no other run
// holds the lock (probed without blocking). Not for a run that holds DIR.lock itself.
InputError load_error_while_saving(const std::string& dir, const InputError& e);

// --- loading ---

struct CheckpointFile {
  std::string name;  // rank-NNNNN.safetensors (legacy: rank-NNNNN.bin)
  uint64_t bytes = 0;
  std::string checksum;  // FNV-1a 64 of every byte, 16 hex digits
};

struct CheckpointManifest {
  std::string dir;   // where it was found: DIR, or DIR.tmp / DIR.old after a crashed save
  std::string path;  // dir + "/manifest.json"
  // Schemas 1 and 2 (rank-NNNNN.bin files without placements): load only into the plan that
  // wrote them, through load_legacy_rank_file.
  bool legacy = false;
  uint64_t fnv_basis = 0;  // the checksums' offset basis (schema 1 used a wrong one)
  int64_t step = 0;
  int world = 0;
  CheckpointPlanInfo info;  // legacy: fingerprint only
  std::vector<CheckpointFile> files;
};

// The manifest of DIR. When DIR has none, a save interrupted between its renames is recovered
// read-only (DIR.tmp with a manifest, else DIR.old). InputError naming the manifest for a
// missing or malformed one, an unknown schema or checksum, or a file name other than the rank's.
CheckpointManifest read_manifest(const std::string& dir);

// Refuses (InputError naming the manifest and the first tensor, in the plan's order, that
// differs) a checkpoint of another model: tensors missing, extra, of another shape or update
// rule.
void check_same_model(const CheckpointManifest& m, const CheckpointPlanInfo& plan);

// Rows [begin, end) of the entry `name` (a tensor's "/param", "/momentum", "/variance") as
// `dtype` ("f32" or "bf16").
struct ShardRequest {
  std::string name;
  std::string dtype;
  int64_t begin = 0, end = 0;
};

// Gathers each request from the rank files that hold its rows, whatever plan wrote them: every
// file's header is read; the files with rows wanted, and every file i with i % world == rank
// (so that on every resume each file is verified by some rank), are read whole and checked
// against the manifest's size and checksum. fp32 momentum is rounded to bf16 (nearest even)
// when asked for; bf16 asked for as fp32 is refused. InputError naming the file for a torn,
// altered or malformed file, naming the entry for rows no file holds or a dtype it cannot give.
std::vector<CheckpointEntry> load_shards(const CheckpointManifest& m, int rank, int world,
                                         const std::vector<ShardRequest>& wants);

// Schema 1 or 2: this rank's entries, whole, as that plan saved them (begin/end unset). The
// world size and plan fingerprint must be the run's (InputError naming the manifest).
std::vector<CheckpointEntry> load_legacy_rank_file(const CheckpointManifest& m, int rank, int world,
                                                   const std::string& fingerprint);

// Every entry of a checkpoint as whole tensors, in the stored dtype (the Python reader).
struct WholeEntry {
  std::string name;
  std::string dtype;  // "f32" | "bf16"
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};
struct WholeCheckpoint {
  int64_t step = 0;
  std::vector<WholeEntry> entries;  // the manifest's tensor order; param, momentum, variance
};
// Legacy checkpoints hold no placements and are refused, naming the schema.
WholeCheckpoint read_whole_checkpoint(const std::string& dir);

// A whole tensor given to write_whole_checkpoint: float32, row-major, `shape`'s elements.
struct WholeTensorIn {
  std::vector<int64_t> shape;
  const float* data = nullptr;
};
// Cuts whole tensors into `plan`'s shards, one rank file per rank, and saves them as step
// `step` (save_checkpoint_all): "<t>/param" for every tensor of the plan; "<t>/momentum" and,
// for AdamW tensors, "<t>/variance" default to zeros (a fresh optimizer, as `execute` starts).
// Momentum is stored as the plan keeps it (bf16 rounds to nearest even). Refused before
// anything is written, with an InputError naming the entry: a name that is not such an entry,
// a shape other than the plan's, a missing param, a step checkpoint_step_fault refuses, and
// values `--resume` would call damaged after the rounding (stored_values_fault).
void write_whole_checkpoint(const std::string& dir, const Plan& plan, int64_t step,
                            const std::map<std::string, WholeTensorIn>& tensors);

}  // namespace muonplan::exec
