#pragma once
// The state a checkpoint holds per tensor, one table for every side that names it: the save
// (snapshot, execute.cc), the resume (the entries wanted and their restore), the save's and the
// loader's checks (checkpoint.cc, checkpoint_load.cc) and read_whole_checkpoint. An entry is
// "<tensor>/<field>" (dion's state keys, docs/checkpoint-format.md) in one of two dtypes. A
// field or dtype added here is written, wanted, checked and loaded alike.

#include <cstddef>
#include <cstdint>
#include <string>

#include "muonplan/exec/field.h"

namespace muonplan::exec {

// A dtype's name in a CheckpointEntry (and ShardRequest) and in the safetensors header.
struct CheckpointDtype {
  const char* entry;
  const char* safetensors;
  size_t bytes;  // per element
};
inline constexpr CheckpointDtype kCheckpointF32{"f32", "F32", 4};
inline constexpr CheckpointDtype kCheckpointBf16{"bf16", "BF16", 2};
inline constexpr const CheckpointDtype* kCheckpointDtypes[] = {&kCheckpointF32, &kCheckpointBf16};

struct CheckpointField {
  const char* name;  // after "<tensor>/"
  Field state;       // where RankState keeps it
  bool bf16;         // bf16 when the plan keeps momentum in bf16 (--bf16-momentum), else f32
  bool adamw_only;   // AdamW tensors only (LocalParam::v; the manifest's rule "adamw")
};
inline constexpr CheckpointField kCheckpointFields[] = {
    {"param", Field::param, false, false},
    {"momentum", Field::momentum, true, false},
    {"variance", Field::variance, false, true},
};

// The field named `name`, the dtype named `name` in an entry or in a safetensors header; nullptr
// for none.
const CheckpointField* checkpoint_field(const std::string& name);
const CheckpointDtype* checkpoint_dtype(const std::string& entry_name);
const CheckpointDtype* safetensors_checkpoint_dtype(const std::string& safetensors_name);

// Whether a tensor holds the field (AdamW or not) and in which dtype it is kept.
inline bool holds(const CheckpointField& f, bool adamw) {
  return adamw || !f.adamw_only;
}
inline const CheckpointDtype& kept_dtype(const CheckpointField& f, bool bf16_momentum) {
  return f.bf16 && bf16_momentum ? kCheckpointBf16 : kCheckpointF32;
}
// Whether the field may be stored in `d`: f32 always, bf16 only where the field may be bf16
// (the loader widens nothing: a bf16 entry is resumed as bf16).
inline bool dtype_allowed(const CheckpointField& f, const CheckpointDtype& d) {
  return &d == &kCheckpointF32 || f.bf16;
}

// What no run saves, so that `--resume` calls the checkpoint damaged and Python's
// write_checkpoint refuses to store it (one rule, both sides): a NaN or Inf (the step stops
// before a non-finite value reaches the state), or a negative AdamW variance. `bytes`: `n`
// values in `dtype`. "" when every value may be stored, else "holds V at element I; why" with I
// counted from `first_element`.
std::string stored_values_fault(const uint8_t* bytes, size_t n, const CheckpointDtype& dtype,
                                bool variance, int64_t first_element = 0);

// "/param, /momentum or /variance": the fields, as messages list them.
std::string checkpoint_fields_text();

}  // namespace muonplan::exec
