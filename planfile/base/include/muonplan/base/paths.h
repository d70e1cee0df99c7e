// Where a path leads, for the rules that keep outputs off inputs and out of checkpoints
// (docs/reliability.md, "Paths"). Every front end (the CLI, the report writer, the checkpoint
// save the Python bindings call) asks here, so one path has one answer everywhere.
#pragma once

#include <filesystem>
#include <string>

namespace muonplan {

// The file the system would open for `path`: absolute, every symbolic link followed, a dangling
// one too (a write through `out -> ck/new.json` creates ck/new.json), and the part that does
// not exist yet appended as written. Loops stop after 40 links, as the kernel's do.
std::filesystem::path resolve_path(const std::string& path);

// Whether directory `dir` holds a muonplan checkpoint: a regular manifest.json naming the
// checkpoint schema. Opened without blocking: a FIFO there is no checkpoint.
bool holds_checkpoint(const std::filesystem::path& dir);

// The nearest directory strictly above `path` (resolved) that holds a muonplan checkpoint;
// empty when none does.
std::string enclosing_checkpoint(const std::string& path);

// InputError "FLAG: PATH is inside the muonplan checkpoint directory CK, ..." when `path` lies
// inside a checkpoint: every later save into CK would refuse a directory holding a foreign file.
void refuse_inside_checkpoint(const std::string& flag, const std::string& path);

}  // namespace muonplan
