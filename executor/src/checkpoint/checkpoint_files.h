// Names and constants the checkpoint writer, loader and legacy loader share
// (docs/checkpoint-format.md).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace muonplan::exec::ckpt {

// Schema 3: safetensors rank files with placements, loadable into any plan of the model.
inline constexpr const char* kSchema = "muonplan.checkpoint/3";
// Schemas 1 and 2: rank-NNNNN.bin files of our own format, for one plan only. Schema 1
// manifests checksummed with an FNV offset basis one digit short (1469598103934665603; the
// standard one is 14695981039346656037); they are verified with the basis they were written
// with.
inline constexpr const char* kLegacySchema2 = "muonplan.checkpoint/2";
inline constexpr const char* kLegacySchema1 = "muonplan.checkpoint/1";
inline constexpr uint64_t kLegacyFnvBasis = 1469598103934665603ull;
// The legacy rank file's first 8 bytes.
inline constexpr char kLegacyMagic[8] = {'M', 'U', 'O', 'N', 'C', 'K', 'P', 'T'};
inline constexpr const char* kStepEntry = "step";  // the group's step count, as dion keeps it

// "ckpt/" and "ckpt" name one checkpoint, whose siblings are ckpt.tmp and ckpt.old.
std::string without_trailing_slash(std::string dir);

// rank-RRRRR.safetensors (legacy: rank-RRRRR.bin).
std::string rank_file(int rank, bool legacy = false);

// Whether `name` is rank-<digits>.safetensors (legacy: .bin).
bool is_rank_file_name(const std::string& name, bool legacy);

// Elements of dim-0 rows of a tensor of this shape (1 for a 1-D tensor).
int64_t row_elems(const std::vector<int64_t>& shape);

// "model.x.weight/momentum" -> {"model.x.weight", "momentum"}; {"", ""} without a '/'.
std::pair<std::string, std::string> split_entry_name(const std::string& name);

// Throws "PATH: WHAT: strerror(errno)" as a runtime failure.
[[noreturn]] void sys_fail(const std::string& what, const std::string& path);

// Refuses (InputError, field --checkpoint), before anything is written or removed, a path among
// DIR, DIR.tmp and DIR.old that is not a muonplan checkpoint's (checkpoint_lock.cc).
void check_replaceable(const std::string& dir);

}  // namespace muonplan::exec::ckpt
