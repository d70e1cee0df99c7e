// The checkpoint side of `muonplan execute`: the lock a run holds, the resume every rank
// agrees on, and the entries a save writes (execute_checkpoint.h).
#include "run/execute_checkpoint.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>

#include "muonplan/base/error.h"
#include "muonplan/exec/agreed_error.h"
#include "muonplan/exec/checkpoint_entries.h"
#include "muonplan/exec/plan_shards.h"

namespace muonplan::exec {
namespace {

// The cause in a peer's failure notice received while loading: its own message after the
// watchdog's "rank R failed at step 0: ", or "" when the notice says something else (a rank
// that died). Every rank prints the agreed cause, so a notice holds that one.
std::string notice_cause(const RankFailure& e) {
  const std::string what = e.what();
  const std::string prefix = "rank " + std::to_string(e.failed_rank) + " failed at step 0: ";
  return e.step == 0 && what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : "";
}

// The message `root` found, on every rank (`own` is this rank's, empty if it found none); at
// most kCauseBytes - 1 bytes of it. Collective.
std::string agreed_cause(Communicator& comm, int root, const std::string& own) {
  constexpr size_t kCauseBytes = 1024;
  std::vector<char> buf(kCauseBytes, '\0');
  if (comm.rank() == root) own.copy(buf.data(), kCauseBytes - 1);
  try {
    comm.broadcast(buf.data(), kCauseBytes, root);
  } catch (const RankFailure& e) {
    // A rank that has the cause may print and announce it before this rank's receive
    // completes: its notice carries the same cause.
    const std::string cause = notice_cause(e);
    if (cause.empty()) throw;
    return cause;
  }
  return buf.data();
}

// What this rank's state needs from a checkpoint: every field of every shard it holds (replicas
// too), in the dtype the plan keeps it in.
std::vector<ShardRequest> wanted(const RankState& state) {
  std::vector<ShardRequest> out;
  for (const LocalParam& p : state.params()) {
    if (p.elems() == 0) continue;
    const std::string& name = state.plan().inventory.tensors[p.tensor].name;
    for (const CheckpointField& f : kCheckpointFields) {
      if (!holds(f, p.v != nullptr)) continue;
      out.push_back(
          {name + "/" + f.name, kept_dtype(f, p.m_bf16 != nullptr).entry, p.begin, p.end});
    }
  }
  return out;
}

// Refuses a loaded entry holding what no run saves (stored_values_fault, the rule Python's
// write_checkpoint applies too). One pass over the loaded bytes, beside reading them from disk.
void check_loaded_values(const CheckpointEntry& e, bool variance, const std::string& dir) {
  const CheckpointDtype* dtype = checkpoint_dtype(e.dtype);
  if (!dtype) throw std::runtime_error(dir + ": entry " + e.name + " has dtype " + e.dtype);
  const std::string fault =
      stored_values_fault(e.bytes.data(), e.bytes.size() / dtype->bytes, *dtype, variance);
  if (!fault.empty()) {
    throw InputError({dir, 0, 0}, e.name,
                     fault + ": the checkpoint is damaged, refusing to resume from it");
  }
}

// Copies loaded entries into the state; each must be there in the plan's dtype and size (a
// legacy checkpoint's entries are checked here, resharded ones were gathered to fit).
void restore(RankState& state, const std::vector<CheckpointEntry>& entries,
             const std::string& dir) {
  std::map<std::string, const CheckpointEntry*> by_name;
  for (const CheckpointEntry& e : entries) by_name[e.name] = &e;
  auto get = [&](LocalParam& p, const std::string& name, const CheckpointField& field) {
    const Field f = field.state;
    const char* dtype = kept_dtype(field, p.m_bf16 != nullptr).entry;
    const size_t bytes = state.field_bytes(p, f);
    const auto it = by_name.find(name);
    if (it == by_name.end()) throw std::runtime_error(dir + ": checkpoint has no entry " + name);
    if (it->second->dtype != dtype || it->second->bytes.size() != bytes) {
      throw std::runtime_error(dir + ": entry " + name + " is " + it->second->dtype + " of " +
                               std::to_string(it->second->bytes.size()) +
                               " bytes; the plan needs " + dtype + " of " + std::to_string(bytes));
    }
    check_loaded_values(*it->second, f == Field::variance, dir);
    state.copy_in(p, f, it->second->bytes.data());
  };
  for (LocalParam& p : state.params()) {
    if (p.elems() == 0) continue;
    const std::string& name = state.plan().inventory.tensors[p.tensor].name;
    for (const CheckpointField& f : kCheckpointFields) {
      if (holds(f, p.v != nullptr)) get(p, name + "/" + f.name, f);
    }
  }
}

// Loads the checkpoint at `dir` into this rank's state. A schema-3 checkpoint of the same model
// loads into any plan; older ones only into the plan that wrote them.
Resumed resume(RankState& state, const std::string& dir, int world) {
  const CheckpointManifest m = read_manifest(dir);
  if (m.legacy) {
    restore(state, load_legacy_rank_file(m, state.rank(), world, plan_fingerprint(state.plan())),
            m.dir);
  } else {
    check_same_model(m, checkpoint_plan_info(state.plan()));
    restore(state, load_shards(m, state.rank(), world, wanted(state)), m.dir);
  }
  return {m.step, m.dir};
}

// A save interrupted between its renames leaves no DIR/manifest.json; the resume then loads
// DIR.tmp (complete, not yet renamed) or DIR.old (the one before), and every rank says so: the
// run continues from another step than DIR would suggest (docs/checkpoint-format.md).
void say_where_resumed(const Resumed& r, const std::string& asked, int rank) {
  std::string given = asked;
  while (given.size() > 1 && given.back() == '/') given.pop_back();
  if (r.dir == given) return;
  const std::string line = "muonplan: rank " + std::to_string(rank) + ": --resume: " + given +
                           " holds no manifest.json (a save was interrupted); resumed from " +
                           r.dir + ", step " + std::to_string(r.step) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace

// This rank's entries for a checkpoint: the shards it is the primary holder of (replicas hold
// the same rows, and every row is stored once), none for a shard without rows.
std::vector<CheckpointEntry> snapshot(const RankState& state) {
  std::vector<CheckpointEntry> out;
  auto add = [&](const LocalParam& p, const std::string& name, const CheckpointField& f) {
    CheckpointEntry e;
    e.name = name;
    e.dtype = kept_dtype(f, p.m_bf16 != nullptr).entry;
    e.begin = p.begin;
    e.end = p.end;
    e.bytes.resize(state.field_bytes(p, f.state));
    state.copy_out(p, f.state, e.bytes.data());
    out.push_back(std::move(e));
  };
  for (const LocalParam& p : state.params()) {
    if (!p.primary || p.elems() == 0) continue;
    const std::string& name = state.plan().inventory.tensors[p.tensor].name;
    for (const CheckpointField& f : kCheckpointFields) {
      if (holds(f, p.v != nullptr)) add(p, name + "/" + f.name, f);
    }
  }
  return out;
}

// Before anything runs: no other run may be writing the checkpoint, and its path must be ours
// to replace (rank 0 does the directory work of a save, so it holds the lock). Every rank
// learns of a refusal, so none waits in a collective for one that gave up.
std::unique_ptr<CheckpointLock> lock_checkpoint(const ExecuteOptions& opt, Communicator& comm) {
  std::unique_ptr<CheckpointLock> lock;
  RankError error;
  try {
    if (comm.rank() == 0) {
      lock = std::make_unique<CheckpointLock>(opt.checkpoint_dir);
    }
  } catch (const InputError& e) {
    error = {e.what(), true};
  }
  const AgreedErrors agreed = agree_on_errors(&comm, error);
  error.rethrow_if_failed();
  if (agreed.count > 0) throw InputError({}, "--checkpoint", "refused on rank 0 (see its message)");
  return lock;
}

// Loads opt.resume_dir on every rank. Every rank learns whether any rank failed to load, so
// none waits in a collective for one that gave up.
// A refused checkpoint (wrong world or plan, torn, altered, missing) is bad input, exit 2
// on every rank (docs/cli-contract.md); any other failure stays a runtime failure.
Resumed resume_on_every_rank(RankState& state, const ExecuteOptions& opt, int world,
                             Communicator& comm) {
  Resumed resumed;
  RankError error;
  try {
    resumed = resume(state, opt.resume_dir, world);
  } catch (const InputError& e) {
    // Another run saving into the checkpoint as it is read (this run's own lock, on
    // --checkpoint DIR, is no such run).
    const bool own = opt.resume_dir == opt.checkpoint_dir;
    error = {own ? e.what() : load_error_while_saving(opt.resume_dir, e).what(), true};
  } catch (const std::exception& e) {
    error = {e.what(), false};
  }
  const AgreedErrors agreed = agree_on_errors(&comm, error, [&](const RankFailure& e) {
    // A peer's notice that arrives before the agreement is its load failure: its cause, as
    // the agreement below would have said it.
    const std::string cause = notice_cause(e);
    if (!cause.empty()) throw InputError({}, "", cause);
    throw InputError({}, "--resume",
                     "checkpoint " + opt.resume_dir + " could not be loaded on rank " +
                         std::to_string(e.failed_rank));
  });
  if (agreed.count > 0) {
    // Every rank prints the cause the highest failed rank found, so the first line on stderr
    // names it whichever rank's line mpirun shows first (a generic "could not be loaded on
    // rank R" once came first on some runs).
    RankError{agreed_cause(comm, agreed.highest_rank, error.what), agreed.highest_input}.rethrow();
  }
  say_where_resumed(resumed, opt.resume_dir, comm.rank());
  return resumed;
}

}  // namespace muonplan::exec
