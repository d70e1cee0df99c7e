// Activation checkpointing per decoder layer as prime-rl's trainer applies it (model.py apply_ac,
// models/layers/checkpointing.py; docs/planner.md, "Activation checkpointing"): the one rule the
// step's timeline (step_timeline_phases.cc, whence its memory terms), its traffic, its recompute
// time (roofline.cc) and AC offload's host buffers read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cost/activation_sizes.h"
#include "muonplan/planfile/plan_options.h"
#include "muonplan/planner/model_spec.h"

namespace muonplan {

// apply_ac skips the layers whose index is not a multiple of freq (they keep every activation);
// the others are wrapped whole (full: only the input saved, the forward run again in backward)
// or, selective, keep everything but what their targets' checkpointed functions make.
enum class LayerAc { none, full, selective };
LayerAc layer_ac(const Workload& w, int64_t layer);

// prime-rl's SELECTIVE_AC_TARGETS, and the default when a config lists none.
inline constexpr const char* kAcTargetNames[] = {"norm",        "attn_proj",      "mlp",
                                                 "mla_up_proj", "routed_experts", "linear_attn"};
inline constexpr const char* kDefaultAcTarget = "norm";
// The workload's selective targets (ac_targets, else the default).
std::vector<std::string> ac_targets(const Workload& w);
bool ac_target_on(const Workload& w, std::string_view target);

// Layer `layer`'s tensor `a` is recomputed in backward rather than saved: every tensor of a
// full-AC layer, the tensors of an enabled target's function on a selective one.
bool recomputed(const Workload& w, int64_t layer, const ActivationTensor& a);

// The targets a layer of the model supports (get_supported_targets): norm always; attn_proj
// (attention with attn_projections and output_proj: every attention the planner models);
// mla_up_proj (MLA); mlp (a dense MLP); routed_experts (an MoE block); linear_attn (none of the
// planner's attention kinds).
std::vector<std::string> supported_ac_targets(const ModelSpec& s, int64_t layer);

// apply_ac's checks: an unknown target, or one no checkpointed layer supports, is prime-rl's
// ValueError; InputError naming --ac-targets with the model's supported targets.
void check_ac_targets(const ModelSpec& s, const Workload& w, int64_t layers);

// AC offload (prime-rl's ac_offloading; planned with full AC on every layer only,
// workload_cost.cc refuses the rest): each decoder layer's checkpointed input goes to a pinned
// host buffer in forward and comes back in backward.
bool offloads_layer_inputs(const Workload& w);
// prime-rl's offloader (utils/act_offloading.py, OffloadActivations, adapted from torchtune's)
// sets `use_streams = False` whatever its config says ("they can result in memory leaks"): each
// saved input is copied to pinned host memory with `copy_(non_blocking=True)` on the compute
// stream in forward and brought back with `.to(cuda, non_blocking=True)` on it in backward. So
// for a prime-rl trainer (Workload::trainer set) the copies do not overlap compute, and no
// forward stash holds inputs on the GPU: `max_inflight_activations` (max_fwd_stash_size) only
// sizes the stream path it disables. Other trainers: a stream that overlaps compute, with the
// topology's or the config's in-flight count.
bool offload_copies_on_compute_stream(const Workload& w);
// Those host buffers of one micro step, one per layer input in forward order (its
// hidden_state_bytes, the tensor the step timeline checkpoints and frees as it offloads it);
// empty without AC offload. The host RAM term, its pinned rounding and the copies' time read them.
std::vector<double> ac_offload_host_buffers(const ModelSpec& s, const PlanOptions& o);

}  // namespace muonplan
