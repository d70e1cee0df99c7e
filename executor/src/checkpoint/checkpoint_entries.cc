#include "muonplan/exec/checkpoint_entries.h"

namespace muonplan::exec {

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
