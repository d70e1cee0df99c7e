// Activation sizes of one decoder layer, stated once for the training step's allocation
// timeline (step_timeline.cc), whence its memory terms: Korthikanti et al. (2022)
// with flash attention (no s^2 score tensors) and SwiGLU/MoE MLPs (docs/planner.md section 8).
#pragma once

#include <cstdint>
#include <vector>

#include "cost/candidate_context.h"  // top_k, vocab_block
#include "muonplan/planner/model_spec.h"

namespace muonplan {

// Attention shape: query and key/value head counts (GQA shares k/v heads), per-head dims.
struct Heads {
  double q = 0, kv = 0, qk = 0, v = 0;
};
Heads heads_of(const ModelSpec& s);

// torchtitan's TOKEN_GROUP_ALIGN_SIZE_M for bf16 (16 in older torchtitan): generate_permute_
// indices pads each expert's rows to a multiple of it.
constexpr double kMoeAlignRows = 8;

// One tensor a layer's forward makes, t tokens: saved for its backward, or (freed_after set)
// a temporary of the forward that goes once the tensor named there is made (a name not in the
// list: at the end of the layer's forward). Backward makes each one's gradient in turn.
struct ActivationTensor {
  const char* name;
  double bytes = 0;
  bool mlp = false;  // in the MLP / MoE block (backward reaches it first), else attention
  const char* freed_after = nullptr;
  // The selective-AC target (prime-rl's name) whose checkpointed function makes this tensor:
  // under that target it is recomputed in backward, not saved (ac_layers.h). None: saved under
  // every selective target (the tensors a norm, attn_projections, output_proj or mla_up_proj
  // makes are read and saved by the operation after them: the projections' outputs by
  // attention, the norms' outputs by the next linear).
  const char* ac_target = nullptr;
  bool saved() const { return freed_after == nullptr; }
};

// The tensors of layer `layer`, in the order the forward makes them, at expert parallelism
// `ep`, with LoRA adapters of rank `expert_lora_rank` on the routed experts (0: none): the MoE
// block's hidden-width rows of torchtitan's ep-1 path (the expert_parallel wrapper's copies,
// the fp32 routed output) are ep 1's, and so are, under expert LoRA, the experts' base and
// adapter outputs (MultiLoRAGroupedExperts); at ep > 1 the routed tokens' copies are the
// all-to-all buffers (layer_a2a_buffers) and expert LoRA adds no rows.
// A bf16 hidden state of `t` tokens, 2 B x t x hidden: a layer's input (AC's checkpoint, what AC
// offload moves to the host), its output, the final norm's output and each of their gradients.
// The one rule for them: the step timeline and the host's AC offload buffers (ac_layers.h) size
// them by it.
inline double hidden_state_bytes(const ModelSpec& s, double t) {
  return 2 * t * double(s.hidden_size);
}
// Tokens per rank per micro step, t: seq_len / cp x micro_batch_seqs.
inline double micro_step_tokens(const Workload& w, const Layout& l) {
  return double(w.seq_len) / l.cp * double(w.micro_batch_seqs);
}

std::vector<ActivationTensor> layer_activation_tensors(const ModelSpec& s, int64_t layer, double t,
                                                       int ep, int64_t expert_lora_rank = 0);
// The saved ones' sum: the layer's activation bytes without recomputation.
double layer_activation_bytes(const ModelSpec& s, int64_t layer, double t, int ep,
                              int64_t expert_lora_rank = 0);

// The rows the routed experts' grouped GEMMs run over, t tokens per rank: t x top-k routed
// copies, plus, where torchtitan's expert_parallel wrapper permutes them into expert order at
// ep 1 (not under expert LoRA: MultiLoRAGroupedExperts has no permute there), kMoeAlignRows of
// padding per expert. At ep > 1 the copies without padding (the table above lists no wrapper).
double moe_grouped_rows(const ModelSpec& s, double t, int ep, int64_t expert_lora_rank);

// The all-to-all buffers of one layer's pass (forward, recompute, or its gradients' in
// backward), t tokens per rank: the exchanges' outputs, each a new tensor beside its input (a
// rank receives what it sends under balanced routing). Ulysses CP (cp > 1): q, k and v to
// [tokens x cp, heads / cp] before attention and its output back, the bytes of those
// activations. EP (ep > 1, MoE layers): the dispatch's received tokens, the experts' output
// and the combine's received tokens, each top-k copies of a bf16 hidden state. Ring CP and
// ep 1 have none.
struct CommBuffer {
  const char* name;
  double bytes = 0;
  bool mlp = false;  // EP's (the MLP block), else CP's (attention)
};
std::vector<CommBuffer> layer_a2a_buffers(const ModelSpec& s, int64_t layer, double t, bool ulysses,
                                          int cp, int ep);

// The LM head's temporaries as prime-rl's trainer makes them
// (src/prime_rl/trainer/models/layers/lm_head.py), in bytes per element of what they span:
// allocated in this order, each freed right after tensor `freed_after` is allocated, or, with
// kHeldByTrainer, kept past the pass by a reference of the training loop (freed when the next
// micro step's forward rebinds it: step_timeline_phases.cc).
constexpr int kHeldByTrainer = -1;
struct LmHeadTensor {
  const char* name;
  double bytes_per_elem = 0;
  int freed_after = 0;
};
// The fused head (RL: FusedOutputLinear) runs over blocks of [token chunk, vocab block]. Its
// backward holds per block element the bf16 logits (2), their fp32 scaled copy (4), the fp32
// probabilities (4), the fp32 logit gradient (4), that times 1/temperature (4, a new tensor)
// and its bf16 cast for the GEMMs (2): 20 B. Python names keep one block's tensors until the
// next block's replace them, so the steady state holds about one block's worth, 20 B.
// Its vocabulary block: vocab_block (candidate_context.h).
const std::vector<LmHeadTensor>& fused_lm_head_block_tensors();
// The unfused head (SFT: the whole [tokens, vocab] logits). model.py's forward returns
// cast_float_and_contiguous(out): the bf16 logits (2) go once their fp32 copy (4) is made, and
// that copy stays in the dict `out` that sft/train.py keeps through backward and the optimizer
// step (its `del logits` drops only the local name) until the next micro step's
// `out = forward(...)` rebinds it. CrossEntropyLoss (loss_impl "torch", the default) saves
// log_softmax (4, fp32); its backward holds it, the gradient of the log-probabilities (4, dense
// after the label gather) and of the logits (4): 16 B per logit at the peak with the held
// copy; the bf16 cast (2) comes as the log_softmax gradients go.
const std::vector<LmHeadTensor>& unfused_lm_head_tensors();

}  // namespace muonplan
