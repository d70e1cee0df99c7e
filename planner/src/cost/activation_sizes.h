// Activation sizes of one decoder layer, stated once for the training step's memory terms
// (workload_cost.cc) and its allocation timeline (step_timeline.cc): Korthikanti et al. (2022)
// with flash attention (no s^2 score tensors) and SwiGLU/MoE MLPs (docs/planner.md section 8).
#pragma once

#include <cstdint>
#include <vector>

#include "muonplan/model_spec.h"

namespace muonplan {

// Attention shape: query and key/value head counts (GQA shares k/v heads), per-head dims.
struct Heads {
  double q = 0, kv = 0, qk = 0, v = 0;
};
Heads heads_of(const ModelSpec& s);

// Experts each token is routed to (1 for a dense model).
double top_k(const ModelSpec& s);

// One tensor a layer's forward saves for its backward, t tokens.
struct ActivationTensor {
  const char* name;
  double bytes = 0;
  bool mlp = false;  // in the MLP / MoE block (backward reaches it first), else attention
};

// The tensors of layer `layer`, in the order the forward makes them.
std::vector<ActivationTensor> layer_activation_tensors(const ModelSpec& s, int64_t layer, double t);
// Their sum: the layer's activation bytes without recomputation.
double layer_activation_bytes(const ModelSpec& s, int64_t layer, double t);

}  // namespace muonplan
