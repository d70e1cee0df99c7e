#include "muonplan/exec/checkpoint_entries.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "muonplan/exec/bf16.h"

namespace muonplan::exec {

std::string stored_values_fault(const uint8_t* bytes, size_t n, const CheckpointDtype& dtype,
                                bool variance, int64_t first_element) {
  const bool is_bf16 = &dtype == &kCheckpointBf16;
  for (size_t i = 0; i < n; ++i) {
    float v;
    if (is_bf16) {
      bf16 b;
      std::memcpy(&b, bytes + i * sizeof b, sizeof b);
      v = to_float(b);
    } else {
      std::memcpy(&v, bytes + i * sizeof v, sizeof v);
    }
    if (std::isfinite(v) && !(variance && v < 0)) continue;
    char got[32];
    std::snprintf(got, sizeof got, "%g", double(v));
    return std::string("holds ") + got + " at element " +
           std::to_string(first_element + int64_t(i)) +
           (std::isfinite(v) ? "; an AdamW variance is >= 0"
                             : "; a checkpoint holds only finite values");
  }
  return "";
}

const CheckpointField* checkpoint_field(const std::string& name) {
  for (const CheckpointField& f : kCheckpointFields) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

const CheckpointDtype* checkpoint_dtype(const std::string& entry_name) {
  for (const CheckpointDtype* d : kCheckpointDtypes) {
    if (entry_name == d->entry) return d;
  }
  return nullptr;
}

const CheckpointDtype* safetensors_checkpoint_dtype(const std::string& safetensors_name) {
  for (const CheckpointDtype* d : kCheckpointDtypes) {
    if (safetensors_name == d->safetensors) return d;
  }
  return nullptr;
}

std::string checkpoint_fields_text() {
  std::string out;
  const size_t n = std::size(kCheckpointFields);
  for (size_t i = 0; i < n; ++i) {
    out += (i == 0 ? "/" : i + 1 == n ? " or /" : ", /") + std::string(kCheckpointFields[i].name);
  }
  return out;
}

}  // namespace muonplan::exec
