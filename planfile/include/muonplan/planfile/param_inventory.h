// The parameter tensors a plan updates: shape, update rule (docs/muon-step.md section 1),
// matrix partitions and stack dimension. Plan-file data: the planner builds it from a model
// (inventory.h), the plan file carries it, the executor allocates it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "muonplan/base/enum_names.h"

namespace muonplan {

enum class UpdateRule { muon, adamw };
inline constexpr EnumName<UpdateRule> kUpdateRuleNames[] = {{UpdateRule::muon, "muon"},
                                                            {UpdateRule::adamw, "adamw"}};
const char* to_string(UpdateRule rule);

// A row range of a fused matrix that Muon orthogonalizes and scales as its own matrix.
struct Partition {
  std::string name;
  int64_t rows = 0;
};

struct ParamTensor {
  std::string name;
  std::vector<int64_t> shape;  // [n] | [out, in] | [E, out, in] (stack_dim 0)
  UpdateRule rule = UpdateRule::adamw;
  std::vector<Partition> partitions;  // along the out dim; empty: one partition, the whole matrix
  int stack_dim = -1;                 // 0 for expert stacks, -1 otherwise
  int64_t layer = -1;                 // decoder layer index; -1 for embeddings, head, final norm
  bool mtp = false;                   // belongs to a multi-token-prediction layer
  bool routed_expert = false;         // split over expert-parallel ranks

  int64_t numel() const;
  int64_t stack_count() const { return stack_dim == 0 ? shape[0] : 1; }
  // A routed expert's weight (an expert stack, or a tensor split over the EP ranks): what EP
  // shards and what an expert-parallel step treats apart.
  bool is_expert() const { return stack_dim == 0 || routed_expert; }
  int64_t rows() const { return shape[shape.size() - 2]; }  // out dim of a matrix
  int64_t cols() const { return shape.back(); }             // in dim of a matrix
  // Partitions as Muon sees them: the declared ones, or the whole matrix.
  std::vector<Partition> muon_partitions() const;
  // Number of 2-D matrices Muon orthogonalizes for this tensor (stack x partitions).
  int64_t muon_matrix_count() const;
};

struct ShapeGroup {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t count = 0;
};

struct InventorySummary {
  int64_t params_total = 0;
  int64_t params_muon = 0;
  int64_t params_adamw = 0;
  int64_t muon_matrices = 0;
  int64_t tensors = 0;
  std::vector<ShapeGroup> shape_groups;  // sorted by (rows, cols)
};

// Which tensors a step trains is said by where they sit, and nowhere else: `tensors` are
// trained (fp32 master, gradient, optimizer state; the optimizer step updates them), `frozen`
// are read by forward and backward but never trained (LoRA's base weights: bf16, no master,
// gradient or state). Without LoRA `frozen` is empty. The memory model, the training step's
// timeline and its time model read both lists through for_each_weight.
struct ParamInventory {
  std::string model_name;
  std::vector<ParamTensor> tensors;  // main model first, then MTP layers (mtp = true)
  std::vector<ParamTensor> frozen;   // LoRA: the adapted model's base weights

  // Every weight a forward pass reads, with whether it is trained: f(tensor, trained).
  template <class F>
  void for_each_weight(F&& f) const {
    for (const ParamTensor& t : tensors) f(t, true);
    for (const ParamTensor& t : frozen) f(t, false);
  }

  // Totals over the main model, plus the MTP layers when include_mtp.
  InventorySummary summarize(bool include_mtp = false) const;
  int64_t mtp_params() const;
};

}  // namespace muonplan
