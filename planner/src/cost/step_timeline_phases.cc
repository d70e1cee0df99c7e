// A micro step's forward, LM head and backward, and the optimizer step, as one rank's
// allocations (step_timeline.h). FSDP2 (_fsdp_param_group.py, _fsdp_collectives.py): a unit's
// all-gather output lives in the all-gather stream and is held until the next unit's
// all-gather is issued in forward, freed right after copy-out in backward (one unit
// prefetched); the unsharded parameters are default-stream tensors, freed at reshard; the fp32
// reduce-scatter input is allocated in the default stream and held until the next
// post_backward, which drops it before allocating its own; the reduce-scatter output (the
// sharded gradient) is allocated in the reduce-scatter stream.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <utility>

#include "cost/ac_layers.h"
#include "cost/activation_sizes.h"
#include "cost/backward_temporaries.h"
#include "cost/gpu_persistent.h"
#include "cost/step_timeline_record.h"
#include "cost/torch_adamw.h"

namespace muonplan::timeline {

namespace {

// The tensors of one micro step that outlive the phase that made them.
struct MicroState {
  std::vector<int64_t> layers;          // decoder layers in forward order
  std::vector<int> root_params;         // root unit unsharded through forward and backward
  std::vector<int> inputs;              // per layer: its input (the checkpoint), -1 offloaded
  std::vector<std::vector<int>> saved;  // per layer: activations kept (no AC) or recomputed
  std::vector<int> root_grads;          // root weight gradients, to its post_backward
  int hidden = -1;                      // the last layer's output
  int grad = -1;                        // the gradient flowing back
};

// The layer's LoRA adapters (prime-rl's MultiLoRALinear and MultiLoRAGroupedExperts), as its
// FSDP unit has them: adapter names are <module>.lora_A.<slot> (lora.cc, apply_lora).
LoraAdapted lora_adapted(const Recorder& r, const FsdpUnit& u) {
  LoraAdapted lora;
  lora.rank = r.o.lora.rank;
  if (lora.rank <= 0) return lora;
  const std::pair<const char*, bool*> mods[] = {
      {".q_proj.lora_A.", &lora.q},       {".k_proj.lora_A.", &lora.k},
      {".v_proj.lora_A.", &lora.v},       {".o_proj.lora_A.", &lora.o},
      {".gate_proj.lora_A.", &lora.gate}, {".up_proj.lora_A.", &lora.up},
      {".down_proj.lora_A.", &lora.down}};
  for (const FsdpParam& p : u.params) {
    if (p.name->find(".lora_A.") == std::string::npos) continue;
    lora.experts = lora.experts || p.name->find(".experts.") != std::string::npos;
    for (const auto& [tag, on] : mods) *on = *on || p.name->find(tag) != std::string::npos;
  }
  return lora;
}

// Layer `layer`'s tensors (activation_sizes.h) with its unit's expert adapters.
std::vector<ActivationTensor> layer_tensors(const Recorder& r, int64_t layer) {
  return layer_activation_tensors(r.spec, layer, r.t, r.o.layout.ep,
                                  lora_adapted(r, r.units.at(layer)).expert_rank());
}

// The kind of a layer's tensor: recomputed in backward (ac_layers.h) or kept from forward.
const char* act_kind(const Recorder& r, int64_t layer, const ActivationTensor& a) {
  return recomputed(*r.o.workload, layer, a) ? "recomputed_layer_activations" : "activations";
}

// The layer's tensors after its input (the first, the attention norm's input, is the layer
// input itself, already counted): the saved ones stay (their ids), a forward temporary goes
// once the tensor its freed_after names is made, or at the end (its id -1). With
// only_recomputed, the recompute of a selective layer in backward: only the tensors its
// targets' functions make (the others' ids -1).
std::vector<int> alloc_activations(Recorder& r, int64_t layer, bool only_recomputed = false) {
  std::vector<int> ids;
  const auto acts = layer_tensors(r, layer);
  for (size_t k = 1; k < acts.size(); ++k) {
    if (only_recomputed && !recomputed(*r.o.workload, layer, acts[k])) {
      ids.push_back(-1);
      continue;
    }
    ids.push_back(
        r.tl.alloc(layer_part(layer, acts[k].name), act_kind(r, layer, acts[k]), acts[k].bytes));
    for (size_t j = 1; j < k; ++j) {
      if (acts[j].freed_after && std::string_view(acts[j].freed_after) == acts[k].name &&
          ids[j - 1] >= 0) {
        r.tl.free(ids[j - 1]);
        ids[j - 1] = -1;
      }
    }
  }
  for (size_t j = 1; j < acts.size(); ++j) {
    if (!acts[j].saved() && ids[j - 1] >= 0) {
      r.tl.free(ids[j - 1]);
      ids[j - 1] = -1;
    }
  }
  return ids;
}

// The layer's all-to-all buffers (activation_sizes.h) of one block (mlp: EP's; else CP's), or
// of both; they live for the pass that makes them.
std::vector<int> alloc_a2a(Recorder& r, int64_t layer, const char* pass, int block) {
  std::vector<int> ids;
  const Workload& w = *r.o.workload;
  for (const CommBuffer& b : layer_a2a_buffers(r.spec, layer, r.t, w.cp_style == CpStyle::ulysses,
                                               r.o.layout.cp, r.o.layout.ep)) {
    if (block >= 0 && b.mlp != bool(block)) continue;
    ids.push_back(r.tl.alloc(layer_part(layer, b.name, pass), "a2a_buffers", b.bytes));
  }
  return ids;
}
constexpr int kBothBlocks = -1;

// AC offload keeps at most `inflight` layer inputs on the GPU while they stream to the host.
void offload_inputs(Recorder& r, MicroState& m, size_t upto) {
  const Workload& w = *r.o.workload;
  if (!offloads_layer_inputs(w)) return;
  const size_t keep = size_t(std::max(1, r.in.ac_offload_inflight));
  if (upto + 1 < keep) return;
  const size_t k = upto + 1 - keep;
  if (m.inputs[k] >= 0) r.tl.free(m.inputs[k]);
  m.inputs[k] = -1;
}

void record_forward(Recorder& r, MicroState& m) {
  r.tl.phase("forward: root unit");
  int flat = -1;
  if (r.units.count(-1)) {
    flat = gather_flat(r, r.units.at(-1));
    m.root_params = unshard(r, r.units.at(-1));
  }
  int in = r.tl.alloc({.head = "embeddings.output"}, "checkpointed_layer_inputs",
                      hidden_state_bytes(r.spec, r.t));
  for (size_t k = 0; k < m.layers.size(); ++k) {
    const FsdpUnit& u = r.units.at(m.layers[k]);
    r.tl.phase("forward layer " + std::to_string(u.layer));
    const int next_flat = gather_flat(r, u);
    r.tl.free(flat);
    flat = next_flat;
    std::vector<int> params = unshard(r, u);
    std::vector<int> acts = alloc_activations(r, u.layer);
    std::vector<int> a2a = alloc_a2a(r, u.layer, "", kBothBlocks);
    const int out = r.tl.alloc(layer_part(u.layer, "output"), "checkpointed_layer_inputs",
                               hidden_state_bytes(r.spec, r.t));
    const LayerAc ac = layer_ac(*r.o.workload, u.layer);
    if (ac == LayerAc::full) {
      // Under checkpointing the forward's tensors are dropped as it goes.
      for (auto it = acts.rbegin(); it != acts.rend(); ++it) r.tl.free(*it);
      acts.clear();
    } else if (ac == LayerAc::selective) {
      // A checkpointed function's tensors are not saved; freed here, at the layer's end,
      // rather than as the function returns (the shared experts' tensors after it overlap
      // them: an upper bound within forward); the rest stay saved.
      const auto info = layer_tensors(r, u.layer);
      for (size_t j = acts.size(); j-- > 0;) {
        if (acts[j] >= 0 && recomputed(*r.o.workload, u.layer, info[j + 1])) {
          r.tl.free(acts[j]);
          acts[j] = -1;
        }
      }
    }
    free_all(r, a2a);
    m.saved[k] = acts;
    m.inputs[k] = in;
    offload_inputs(r, m, k);
    in = out;
    free_all(r, params);
  }
  r.tl.free(flat);
  m.hidden = in;
}

// One pass of the head's temporaries over `elems` elements (activation_sizes.h), in order. A
// tensor the trainer holds (kHeldByTrainer) replaces the one it held before, which is freed
// only once the new one exists (the name is rebound after forward returns).
void lm_head_pass(Recorder& r, const std::vector<LmHeadTensor>& tensors, double elems,
                  const std::string* tag, const char* kind) {
  std::vector<int> ids;
  for (size_t i = 0; i < tensors.size(); ++i) {
    ids.push_back(r.tl.alloc({.head = "lm_head", .owned = tag, .mid = ".", .tail = tensors[i].name},
                             kind, tensors[i].bytes_per_elem * elems));
    if (tensors[i].freed_after == kHeldByTrainer) {
      r.tl.free(r.held_logits);
      r.held_logits = ids.back();
    }
    for (size_t j = 0; j < tensors.size(); ++j) {
      if (tensors[j].freed_after == int(i)) r.tl.free(ids[j]);
    }
  }
}

// The fused head: token chunks of lm_head_chunk, each over vocab blocks. Every full block
// reuses the blocks the one before freed: the first and the last of each chunk show it, and
// two full token chunks the steady state.
void fused_lm_head(Recorder& r, double vocab) {
  const double c = std::min(double(r.o.workload->lm_head_chunk), r.t);
  const double vb = vocab_block(r.spec);
  const double v_last = vocab - std::floor(vocab / vb) * vb;
  const int64_t full = int64_t(std::floor(r.t / c));
  auto chunk = [&](double tokens, const std::string& tag) {
    lm_head_pass(r, fused_lm_head_block_tensors(), tokens * vb, r.tl.keep(tag),
                 "lm_head_chunk_logits");
    if (v_last > 0)
      lm_head_pass(r, fused_lm_head_block_tensors(), tokens * v_last,
                   r.tl.keep(tag + "[last vocab block]"), "lm_head_chunk_logits");
  };
  for (int64_t i = 0; i < std::min<int64_t>(full, 2); ++i)
    chunk(c, "[chunk " + std::to_string(i) + "]");
  if (r.t - double(full) * c > 0) chunk(r.t - double(full) * c, "[last chunk]");
}

// The LM head's forward and backward (fused in chunks, or unfused over the whole logits); the
// root's weight gradients appear here. The fused head's grad_weight (zeros_like the weight)
// is made even for a frozen head (LoRA; tied embeddings: the embedding), where autograd then
// drops it.
void record_lm_head(Recorder& r, MicroState& m) {
  const Workload& w = *r.o.workload;
  const double vocab = double(r.spec.vocab_size);
  r.tl.phase("LM head");
  const int normed =
      r.tl.alloc({.head = "final_norm.output"}, "lm_head_io", hidden_state_bytes(r.spec, r.t));
  std::vector<int> frozen_head_grad;
  const char* head = r.spec.tie_embeddings ? "embed_tokens" : "lm_head";
  if (r.units.count(-1)) {
    for (const FsdpParam& p : r.units.at(-1).params) {
      if (p.trains)
        m.root_grads.push_back(
            r.tl.alloc(param_name(p, ".grad_unsharded"), "unsharded_layer_grads", 2 * p.unsharded));
      else if (w.lm_head_chunk > 0 && p.name->find(head) != std::string::npos)
        frozen_head_grad.push_back(
            r.tl.alloc(param_name(p, ".grad_weight (dropped)"), "lm_head_io", 2 * p.unsharded));
    }
  }
  m.grad =
      r.tl.alloc({.head = "final_norm.output.grad"}, "lm_head_io", hidden_state_bytes(r.spec, r.t));
  if (w.lm_head_chunk <= 0)
    lm_head_pass(r, unfused_lm_head_tensors(), r.t * vocab, nullptr, "logits");
  else
    fused_lm_head(r, vocab);
  free_all(r, frozen_head_grad);
  // The final norm's backward: the gradient into the last layer's output.
  const int g = r.tl.alloc({.head = "layers.output.grad"}, "activation_grads",
                           hidden_state_bytes(r.spec, r.t));
  r.tl.free(m.grad);
  r.tl.free(normed);
  r.tl.free(m.hidden);
  m.grad = g;
}

// post_backward: reshard, drop the previous reduce-scatter input, copy the unsharded
// gradients into this unit's fp32 input and free them; the output (the sharded gradient) in
// the reduce-scatter stream is kept (first micro step), accumulated and freed (later ones), or
// on its way to the host (full offload: two units in flight).
void post_backward(Recorder& r, const FsdpUnit& u, std::vector<int>& params,
                   std::vector<int>& wgrads, bool first_micro) {
  free_all(r, params);
  r.tl.free(r.rs_input);
  r.rs_input = -1;
  if (u.trained(false) <= 0) return;
  r.rs_input = r.tl.alloc(layer_part(u.layer, "reduce_scatter_input"), "fsdp2_rs_input",
                          r.o.reduce_bytes() * u.trained(false));
  free_all(r, wgrads);
  // Full offload: the bf16 shards leave for the host as backward goes (a workload kind).
  const bool master = r.pol.master == Residence::gpu;
  const ElemArray g = grad_array(r.o, r.pol);
  const int out =
      r.tl.alloc(layer_part(u.layer, "grad_shard"), master ? g.name : "grads_bf16_in_flight",
                 g.bytes * u.trained(true), kReduceScatterStream);
  if (master && first_micro) {
    r.grads.push_back(out);
  } else if (master) {
    r.tl.free(out);
  } else {
    r.grads_in_flight.push_back(out);
    if (r.grads_in_flight.size() > 2) {
      r.tl.free(r.grads_in_flight.front());
      r.grads_in_flight.erase(r.grads_in_flight.begin());
    }
  }
}

// Weight gradients of one part of a layer (MLP or attention), bf16 and unsharded.
void alloc_wgrads(Recorder& r, const FsdpUnit& u, bool mlp, std::vector<int>& out) {
  for (auto it = u.params.rbegin(); it != u.params.rend(); ++it) {
    if (it->trains && it->mlp == mlp)
      out.push_back(r.tl.alloc(param_name(*it, ".grad_unsharded"), "unsharded_layer_grads",
                               2 * it->unsharded));
  }
}

// The layer's backward temporaries (backward_temporaries.h): each allocated as backward
// reaches its first tensor's gradient, freed once its last one's is made.
struct BackwardTemps {
  Recorder& r;
  int64_t layer;
  std::vector<BackwardTemporary> rows;
  std::vector<int> ids;
  BackwardTemps(Recorder& rec, const FsdpUnit& u) : r(rec), layer(u.layer) {
    rows = layer_backward_temporaries(rec.spec, layer, rec.t, rec.o.layout.ep, rec.in.attention,
                                      lora_adapted(rec, u));
    ids.assign(rows.size(), -1);
  }
  void open(std::string_view at) {
    for (size_t i = 0; i < rows.size(); ++i)
      if (ids[i] < 0 && at == rows[i].first)
        ids[i] = r.tl.alloc(layer_part(layer, rows[i].name), rows[i].kind, rows[i].bytes);
  }
  void close(std::string_view at) {
    for (size_t i = 0; i < rows.size(); ++i)
      if (ids[i] >= 0 && at == rows[i].last) r.tl.free(std::exchange(ids[i], -1));
  }
  ~BackwardTemps() {
    for (int id : ids)
      if (id >= 0) r.tl.free(id);
  }
};

// Autograd walks the layer's tensors backwards: each step makes the gradient of one saved
// tensor and frees the gradient it consumed and the saved tensor; the weight gradients of
// the MLP and of attention appear as it reaches them.
void backward_layer(Recorder& r, MicroState& m, size_t k, std::vector<int>& acts,
                    std::vector<int>& wgrads) {
  const FsdpUnit& u = r.units.at(m.layers[k]);
  const auto info = layer_tensors(r, u.layer);
  BackwardTemps temps(r, u);
  bool mlp_done = false, attn_done = false;
  // The gradients' exchanges: the MLP's (EP) while backward is in it, then attention's (CP).
  std::vector<int> a2a;
  auto enter = [&](bool mlp) {
    alloc_wgrads(r, u, mlp, wgrads);
    free_all(r, a2a);
    a2a = alloc_a2a(r, u.layer, " (grad)", int(mlp));
  };
  for (size_t j = acts.size(); j-- > 0;) {
    const ActivationTensor& a = info[j + 1];
    if (a.mlp && !mlp_done) enter(true), mlp_done = true;
    if (!a.mlp && !attn_done) enter(false), attn_done = true;
    temps.open(a.name);
    const int g = r.tl.alloc(layer_part(u.layer, a.name, ".grad"), "activation_grads", a.bytes);
    temps.close(a.name);
    r.tl.free(m.grad);
    r.tl.free(acts[j]);
    m.grad = g;
  }
  if (!mlp_done) alloc_wgrads(r, u, true, wgrads);
  if (!attn_done) alloc_wgrads(r, u, false, wgrads);
  free_all(r, a2a);
  const int g = r.tl.alloc(layer_part(u.layer, "input.grad"), "activation_grads",
                           hidden_state_bytes(r.spec, r.t));
  temps.close(kLayerInputGrad);
  r.tl.free(m.grad);
  r.tl.free(m.inputs[k]);
  m.inputs[k] = -1;
  m.grad = g;
  acts.clear();
}

void record_backward(Recorder& r, MicroState& m, bool first_micro) {
  const Workload& w = *r.o.workload;
  const bool reload = offloads_layer_inputs(w);
  int flat = -1;
  for (size_t k = m.layers.size(); k-- > 0;) {
    const FsdpUnit& u = r.units.at(m.layers[k]);
    r.tl.phase("backward layer " + std::to_string(u.layer));
    if (flat < 0) flat = gather_flat(r, u);
    std::vector<int> params = unshard(r, u);
    r.tl.free(flat);
    flat = k > 0 ? gather_flat(r, r.units.at(m.layers[k - 1])) : -1;
    // AC offload brings the input back (and prefetches the next one's).
    for (size_t j : {k, k - 1}) {
      if (reload && j < m.layers.size() && m.inputs[j] < 0)
        m.inputs[j] = r.tl.alloc(layer_part(m.layers[j], "input (reloaded)"),
                                 "checkpointed_layer_inputs", hidden_state_bytes(r.spec, r.t));
    }
    // The recompute: a full-AC layer's forward again; a selective layer's targets' functions
    // (autograd reaches the MLP block's first, at the layer's start; the tensors of the
    // attention-side targets are saved by the operations after them, ActivationTensor).
    const LayerAc ac = layer_ac(w, u.layer);
    std::vector<int> acts = m.saved[k];
    if (ac == LayerAc::full) {
      acts = alloc_activations(r, u.layer);
    } else if (ac == LayerAc::selective) {
      const std::vector<int> again = alloc_activations(r, u.layer, true);
      for (size_t j = 0; j < acts.size() && j < again.size(); ++j)
        if (again[j] >= 0) acts[j] = again[j];
    }
    // The recompute's exchanges, gone once its saved tensors are made: both blocks' under
    // full AC, EP's when the routed experts (their dispatch and combine inside) are recomputed.
    std::vector<int> a2a;
    if (ac == LayerAc::full)
      a2a = alloc_a2a(r, u.layer, " (recompute)", kBothBlocks);
    else if (ac == LayerAc::selective && ac_target_on(w, "routed_experts"))
      a2a = alloc_a2a(r, u.layer, " (recompute)", 1);
    free_all(r, a2a);
    const int temps =
        r.in.backward_temporaries_fraction > 0
            ? r.tl.alloc(layer_part(u.layer, "backward_temporaries"), "backward_temporaries",
                         r.in.backward_temporaries_fraction *
                             layer_activation_bytes(r.spec, u.layer, r.t, r.o.layout.ep,
                                                    lora_adapted(r, u).expert_rank()))
            : -1;
    std::vector<int> wgrads;
    backward_layer(r, m, k, acts, wgrads);
    r.tl.free(temps);
    post_backward(r, u, params, wgrads, first_micro);
  }
  r.tl.phase("backward: root unit");
  r.tl.free(m.grad);
  if (r.units.count(-1)) post_backward(r, r.units.at(-1), m.root_params, m.root_grads, first_micro);
  // The root's final callback waits for the last reduce-scatter and drops its input.
  r.tl.free(r.rs_input);
  r.rs_input = -1;
  for (int id : r.grads_in_flight) r.tl.free(id);
  r.grads_in_flight.clear();
}

}  // namespace

void record_micro_step(Recorder& r, bool first_micro) {
  MicroState m;
  for (const auto& [layer, u] : r.units) {
    if (layer >= 0) m.layers.push_back(layer);
  }
  m.inputs.assign(m.layers.size(), -1);
  m.saved.resize(m.layers.size());
  record_forward(r, m);
  record_lm_head(r, m);
  record_backward(r, m, first_micro);
}

bool has_optimizer(const PlanOptions& o, const FsdpParam& p) {
  if (o.lora.rank <= 0 || o.lora.active_runs_or() >= o.lora.adapters) return true;
  // Adapter names end in .lora_A.<slot> or .lora_B.<slot> (lora.cc, apply_lora).
  for (const char* tag : {".lora_A.", ".lora_B."}) {
    const size_t at = p.name->rfind(tag);
    if (at != std::string::npos)
      return std::atoll(p.name->c_str() + at + 8) < o.lora.active_runs_or();
  }
  return true;
}

bool runs_optimizer_step(const PlanOptions& o) {
  return o.lora.rank <= 0 || o.lora.active_runs_or() > 0;
}

// The optimizer step: its state appears at the first step (torch optimizers create it
// lazily), its buffers (the cost model's step transient terms) live for the step, and
// zero_grad(set_to_none) frees the gradients after it. Under LoRA only the active runs' slots
// have an AdamW (prime-rl's MultiLoRAOptimizer steps and zeroes ready runs only): with none,
// nothing runs and the gradients stay, accumulated into by the next step.
void record_optimizer_step(Recorder& r) {
  const PlanOptions& o = r.o;
  if (!runs_optimizer_step(o)) return;
  r.tl.phase("optimizer step");
  if (r.state.empty() && o.optimizer != OptimizerKind::signsgd) {
    for (const auto& [layer, u] : r.units) {
      for (const FsdpParam& p : u.params) {
        if (!p.trains || !has_optimizer(o, p)) continue;
        const ElemArray a = state_array(o, r.pol, p.muon);
        if (a.bytes <= 0) continue;  // on the host, or none (signSGD)
        if (o.optimizer == OptimizerKind::muon && p.muon) {
          r.state.push_back(r.tl.alloc(param_name(p, ".momentum"), a.name, p.shard * a.bytes));
        } else {
          const double b = a.bytes / 2;  // one moment
          r.state.push_back(r.tl.alloc(param_name(p, ".exp_avg"), a.name, p.shard * b));
          r.state.push_back(r.tl.alloc(param_name(p, ".exp_avg_sq"), a.name, p.shard * b));
        }
      }
    }
  }
  std::vector<int> buffers;
  // torch's AdamW (foreach, its CUDA default) makes sqrt(exp_avg_sq) for every parameter at
  // once (_multi_tensor_adamw: _foreach_sqrt, then in place _foreach_div_, _foreach_add_ and
  // _foreach_addcdiv_): one fp32 temporary per element of the rank's AdamW shards. Also with
  // the moments staged whole for the step: prime-rl's CPUOffloadOptimizer moves them to the GPU
  // and steps the same AdamW (optim.py builds it without fused= under optim_cpu_offload).
  const bool moments_on_gpu =
      r.pol.adamw_moments == Residence::gpu || r.pol.staging == OffloadStaging::whole;
  if (o.optimizer == OptimizerKind::adamw && moments_on_gpu && r.in.adamw_foreach_temporaries &&
      !fused_adamw(o, r.pol)) {
    for (const auto& [layer, u] : r.units) {
      for (const FsdpParam& p : u.params) {
        if (p.trains && has_optimizer(o, p))
          buffers.push_back(r.tl.alloc(param_name(p, ".exp_avg_sq_sqrt"),
                                       "adamw_foreach_temporaries", 4 * p.shard));
      }
    }
  }
  for (const Term& t : r.in.step_transient)
    if (t.value > 0) {
      const std::string* name = r.tl.keep(t.name);
      buffers.push_back(r.tl.alloc({.owned = name}, *name, t.value));
    }
  free_all(r, buffers);
  free_all(r, r.grads);
}

}  // namespace muonplan::timeline
