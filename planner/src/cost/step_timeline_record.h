// The recording state of step_timeline.cc and step_timeline_phases.cc: FSDP2's units as a rank
// sees them, and the tensors alive across a step's phases. Internal to the timeline.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cost/step_timeline.h"
#include "muonplan/planfile/offload_policy.h"

namespace muonplan::timeline {

// One FSDP2 parameter as a rank sees it: its unsharded elements (what an all-gather makes:
// an expert stack's EP slice) and its shard on the rank. Routed experts stored one tensor per
// expert are one stacked parameter, as prime-rl's MoE layers hold them.
struct FsdpParam {
  const std::string* name = nullptr;  // kept by the timeline (StepTimeline::keep): tensor names
  double unsharded = 0, shard = 0;
  bool muon = false, trains = true, mlp = false;  // mlp: set only with a workload
};

// The elements of `t` one rank's all-gather makes (an expert stack's EP slice): the timeline's
// unsharded parameter and the roofline's FSDP2 copies (roofline.cc) read it.
double unsharded_elements(const ParamTensor& t, int ep);

// An FSDP unit: a decoder layer, or the root (-1: embeddings, final norm, LM head).
struct FsdpUnit {
  int64_t layer = -1;
  std::vector<FsdpParam> params;
  double unsharded() const;
  double trained(bool shard) const;  // elements that get gradients: the shard's or unsharded
};

std::map<int64_t, FsdpUnit> fsdp_units(StepTimeline& tl, const ParamInventory& inv,
                                       const PlanOptions& o, int world, int rank);
std::string layer_name(int64_t layer);
// Tensor names: "layers.N.<head><mid>" (root: "root."), and "<parameter's name><suffix>".
TensorName layer_part(int64_t layer, const char* head, const char* mid = "");
TensorName param_name(const FsdpParam& p, const char* suffix = "");

struct Recorder {
  StepTimeline& tl;
  const ModelSpec& spec;
  const PlanOptions& o;
  const OffloadPolicy& pol;
  const TimelineInputs& in;
  std::map<int64_t, FsdpUnit> units;
  double t = 0;              // tokens per rank per micro step
  std::vector<int> grads{};  // sharded gradients (reduce-scatter outputs), until zero_grad
  std::vector<int> state{};  // optimizer state, created at the first optimizer step
  int rs_input = -1;  // the previous unit's reduce-scatter input, held to the next post_backward
  std::vector<int> grads_in_flight{};  // full offload: bf16 gradient shards on their way out
  int held_logits = -1;  // the unfused head's fp32 logits the SFT loop's `out` still holds
};

// LoRA: whether `p` has an optimizer (an adapter of an active run's slot, --lora-active-runs;
// every parameter without LoRA), and whether the step runs any optimizer at all.
bool has_optimizer(const PlanOptions& o, const FsdpParam& p);
bool runs_optimizer_step(const PlanOptions& o);

int gather_flat(Recorder& r, const FsdpUnit& u);           // all-gather output, all-gather stream
std::vector<int> unshard(Recorder& r, const FsdpUnit& u);  // each param's bf16 copy
void free_all(Recorder& r, std::vector<int>& ids);

void record_persistent(Recorder& r);
void record_micro_step(Recorder& r, bool first_micro);  // forward, LM head, backward
void record_optimizer_step(Recorder& r);

}  // namespace muonplan::timeline
