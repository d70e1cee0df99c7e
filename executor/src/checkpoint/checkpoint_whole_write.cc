// Whole tensors into a plan's shards, written as a checkpoint (checkpoint.h): the writer the
// Python bindings' write_checkpoint calls, with every check inside it.
#include <algorithm>
#include <cstring>

#include "muonplan/base/error.h"
#include "muonplan/exec/bf16.h"
#include "muonplan/exec/checkpoint.h"
#include "muonplan/exec/checkpoint_entries.h"
#include "muonplan/exec/plan_shards.h"

namespace muonplan::exec {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? "," : "") + std::to_string(shape[i]);
  return out + "]";
}

// Every given name is an entry of a tensor of the plan, of the plan's shape.
void check_names_and_shapes(const Plan& plan, const std::map<std::string, WholeTensorIn>& given) {
  const ParamInventory& inv = plan.inventory;
  for (const auto& [name, w] : given) {
    const size_t slash = name.rfind('/');
    const std::string tensor = slash == std::string::npos ? name : name.substr(0, slash);
    const std::string field = slash == std::string::npos ? "" : name.substr(slash + 1);
    const auto t = std::find_if(inv.tensors.begin(), inv.tensors.end(),
                                [&](const ParamTensor& p) { return p.name == tensor; });
    const CheckpointField* f = checkpoint_field(field);
    if (t == inv.tensors.end() || !f || !holds(*f, t->rule == UpdateRule::adamw)) {
      throw InputError({}, name,
                       "not <tensor>/param, /momentum or (AdamW) /variance of a tensor of the "
                       "plan's model");
    }
    if (w.shape != t->shape) {
      throw InputError(
          {}, name,
          "shape " + shape_text(w.shape) + ", the plan's tensor is " + shape_text(t->shape));
    }
  }
  for (const ParamTensor& t : inv.tensors) {
    if (!given.count(t.name + "/param")) throw InputError({}, t.name + "/param", "missing");
  }
}

// Rank r's shard of one field of tensor t, in the dtype it is kept in; zeros when not given.
CheckpointEntry shard_entry(const std::string& name, const WholeTensorIn* src, const ShardRange& s,
                            bool as_bf16, bool variance) {
  const CheckpointDtype& dtype = as_bf16 ? kCheckpointBf16 : kCheckpointF32;
  CheckpointEntry e{name, dtype.entry, s.begin, s.end, {}};
  const size_t n = size_t(s.elems());
  e.bytes.assign(n * dtype.bytes, 0);
  const float* from = src ? src->data + s.begin * s.row_elems : nullptr;
  if (from && as_bf16) {
    auto* out = reinterpret_cast<bf16*>(e.bytes.data());
    for (size_t k = 0; k < n; ++k) out[k] = to_bf16(from[k]);
  } else if (from) {
    std::memcpy(e.bytes.data(), from, n * 4);
  }
  // What --resume would call damaged (NaN, a float64 infinite in float32, a negative variance),
  // by its own rule, after the rounding to the stored dtype.
  const std::string fault =
      stored_values_fault(e.bytes.data(), n, dtype, variance, s.begin * s.row_elems);
  if (!fault.empty())
    throw InputError({}, name, fault + "; --resume would refuse the checkpoint as damaged");
  return e;
}

}  // namespace

std::string checkpoint_step_message(const std::string& shown) {
  return "expected an integer in [0, 10^15], got " + shown;
}

std::string checkpoint_step_fault(int64_t step) {
  if (step >= 0 && step <= kMaxCheckpointStep) return "";
  return checkpoint_step_message(std::to_string(step));
}

void write_whole_checkpoint(const std::string& dir, const Plan& plan, int64_t step,
                            const std::map<std::string, WholeTensorIn>& given) {
  if (const std::string why = checkpoint_step_fault(step); !why.empty())
    throw InputError({}, "step", why);
  check_names_and_shapes(plan, given);
  const ParamInventory& inv = plan.inventory;
  std::vector<std::vector<CheckpointEntry>> per_rank(size_t(plan.world));
  for (size_t ti = 0; ti < inv.tensors.size(); ++ti) {
    const ParamTensor& t = inv.tensors[ti];
    const bool adamw = t.rule == UpdateRule::adamw;
    const bool bf16_m = t.rule == UpdateRule::muon && plan.options.bf16_momentum;
    for (int r = 0; r < plan.world; ++r) {
      const ShardRange s = shard_of(plan, int(ti), r);
      if (!s.primary || s.rows() == 0) continue;
      for (const CheckpointField& f : kCheckpointFields) {
        if (!holds(f, adamw)) continue;
        const std::string name = t.name + "/" + f.name;
        const auto it = given.find(name);
        per_rank[size_t(r)].push_back(shard_entry(name, it == given.end() ? nullptr : &it->second,
                                                  s, &kept_dtype(f, bf16_m) == &kCheckpointBf16,
                                                  std::string(f.name) == "variance"));
      }
    }
  }
  save_checkpoint_all(dir, step, checkpoint_plan_info(plan), per_rank);
}

}  // namespace muonplan::exec
