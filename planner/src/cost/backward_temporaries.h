// The tensors a decoder layer's backward allocates beyond its saved activations and their
// gradients (activation_sizes.h; the step timeline makes one gradient per saved tensor, each
// freed once the next is made): the attention kernel's workspace and outputs, the SwiGLU
// backward's third live gradient, the projections' input gradients before autograd sums them,
// and LoRA's branch. Each row says where it comes from (docs/planner.md section 5c). Internal
// to the cost model; the step timeline allocates them (step_timeline_phases.cc, backward).
#pragma once

#include <cstdint>
#include <vector>

#include "muonplan/planfile/plan_options.h"  // AttentionKernel
#include "muonplan/planner/model_spec.h"

namespace muonplan {

// The layer's LoRA-adapted linears (prime-rl's MultiLoRALinear), as the layer's FSDP unit has
// adapters for them; experts: the routed experts (MultiLoRAGroupedExperts).
struct LoraAdapted {
  bool q = false, k = false, v = false, o = false, gate = false, up = false, down = false;
  bool experts = false;
  int64_t rank = 0;
  int64_t expert_rank() const { return experts ? rank : 0; }
};

// One temporary: allocated as backward reaches the gradient of saved tensor `first` (before that
// gradient is made), freed once the gradient of `last` is made ("input": the layer input's,
// which ends the layer's backward). Names are activation_sizes.h's tensor names.
struct BackwardTemporary {
  const char* name;
  const char* kind;  // the --explain term it goes in
  double bytes = 0;
  const char* first = "";
  const char* last = "";
};
inline constexpr const char* kLayerInputGrad = "input";

// The rows for layer `layer` at `t` tokens per rank, expert parallelism `ep`, attention kernel
// `kernel` (resolved: fa2, fa3 or sdpa, never auto) and the layer's LoRA adapters.
std::vector<BackwardTemporary> layer_backward_temporaries(const ModelSpec& s, int64_t layer,
                                                          double t, int ep, AttentionKernel kernel,
                                                          const LoraAdapted& lora);

}  // namespace muonplan
