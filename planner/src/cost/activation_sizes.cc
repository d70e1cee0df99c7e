// One layer's saved activations, tensor by tensor (activation_sizes.h).
#include "cost/activation_sizes.h"

#include <algorithm>

namespace muonplan {

Heads heads_of(const ModelSpec& s) {
  const AttentionSpec& a = s.attention;
  if (a.kind == AttentionKind::mla) {
    // MLA expands k and v per query head before attention: every head has its own.
    return {double(a.num_heads), double(a.num_heads),
            double(a.qk_nope_head_dim + a.qk_rope_head_dim), double(a.v_head_dim)};
  }
  const double dim = a.head_dim > 0 ? double(a.head_dim) : double(s.hidden_size) / a.num_heads;
  return {double(a.num_heads), double(a.num_kv_heads > 0 ? a.num_kv_heads : a.num_heads), dim, dim};
}

double moe_grouped_rows(const ModelSpec& s, double t, int ep, int64_t expert_lora_rank) {
  const double tk = t * top_k(s);
  // At ep > 1 the table lists the routed copies without the wrapper's padding (below).
  if (ep > 1 || expert_lora_rank > 0) return tk;
  // torchtitan's expert_parallel wrapper permutes even at ep 1: generate_permute_indices pads
  // every local expert's rows to a multiple of TOKEN_GROUP_ALIGN_SIZE_M, x.shape[0] +
  // experts x that many rows in all.
  return tk + double(s.moe.num_experts) * kMoeAlignRows;
}

namespace {

// prime-rl's MoE (trainer/models/layers/moe.py, torchtitan's; the rows' source lines), t
// tokens per rank: the router input and its fp32 probabilities; the routed path at hidden
// width, per routed copy (t x top-k rows); the experts' SwiGLU tensors over the grouped GEMMs'
// rows; the shared experts'.
void moe_tensors(const ModelSpec& s, double t, int ep, int64_t expert_lora_rank,
                 std::vector<ActivationTensor>& v) {
  const double h = double(s.hidden_size), tk = t * top_k(s);
  const double f = double(s.moe.intermediate_size), fs = double(s.moe.shared_intermediate_size);
  const double rows = moe_grouped_rows(s, t, ep, expert_lora_rank);
  // The routed path runs inside _run_routed_experts (the gather, the experts with their
  // expert_parallel wrapper, the score multiply): the routed_experts target's function.
  // Its input (moe_input), the router's probabilities and the shared experts are outside.
  const char* kRouted = "routed_experts";
  auto add = [&](const char* name, double bytes, const char* freed_after = nullptr) {
    v.push_back({name, bytes, true, freed_after, kRouted});
  };
  v.push_back({"moe_input", 2 * t * h, true});
  v.push_back({"router_probs", 4 * t * double(s.moe.num_experts), true});
  if (ep > 1) {
    // Expert parallelism: the dispatch's received tokens, the experts' output and the
    // combine's received tokens are the all-to-all buffers; the saved copy the grouped GEMMs
    // read is one more (as before this table listed the routed path). Not added here: the
    // ep-1 wrapper's copies, and the fp32 routed output, which on the measured
    // GLM-4.5-Air run (ep 8, cp 4) would put the peak 15% over (docs/validation.md). Nor,
    // under LoRA on the experts, MultiLoRAGroupedExperts' base and adapter outputs: at ep > 1
    // it permutes and pads as the wrapper does and its outputs live until the combine, which
    // this table has as all-to-all buffers, not rows; listing them needs that path as rows
    // (branch moeep, not merged: it moves the GLM-4.5-Air run out of its tolerance).
    add("routed_tokens", 2 * tk * h);
    add("expert_gate", 2 * tk * f);
    add("expert_up", 2 * tk * f);
    add("expert_act", 2 * tk * f);
  } else if (expert_lora_rank <= 0) {
    // _run_routed_experts: routed_input = torch.gather(x, 0, routed_indices); the local name
    // holds it until the function returns.
    add("routed_input", 2 * tk * h, "routed_output_bf16");
    // expert_parallel: x = torch.vstack((x, x.new_zeros(...))), one zero row more.
    add("permute_vstack", 2 * (tk + 1) * h, "routed_tokens");
    // expert_parallel: x = x[permuted_indices, :], saved by the grouped GEMMs.
    add("routed_tokens", 2 * rows * h);
    add("expert_gate", 2 * tk * f);
    add("expert_up", 2 * tk * f);
    add("expert_act", 2 * tk * f);
    // _run_experts_grouped_mm: out = torch._grouped_mm(h, w2, ...), padded rows.
    add("expert_out", 2 * rows * h, "unpermute_buffer");
    // expert_parallel: out_unpermuted = out.new_empty(input_shape), filled by index.
    add("unpermute_buffer", 2 * (tk + 1) * h, "routed_output_fp32");
  } else {
    // LoRA on the experts at ep 1: MultiLoRAGroupedExperts.forward (lora/multi_moe.py), the
    // grouped-GEMM path, runs on the gathered tokens as they are (no vstack, padding or
    // un-permute at ep 1): the gather is what its GEMMs save.
    add("routed_tokens", 2 * tk * h);
    // Per projection the base output (h1_base, h3_base, h2_base) and the adapter's
    // (_run_lora_grouped_mm: A's [rows, rank] output, saved by B's GEMM, then B's), all bf16;
    // the base and adapter outputs are locals to the forward's end; `scaling * lora_out` goes
    // once the sum is made. The sums h1 and h3 are saved (silu, the product); the product is
    // saved by w2's GEMMs.
    const double r = double(expert_lora_rank);
    const char* end = "expert_out";
    add("expert_gate_base", 2 * rows * f, end);
    add("expert_gate_lora_a", 2 * rows * r);
    add("expert_gate_lora_out", 2 * rows * f, end);
    add("expert_gate_lora_scaled", 2 * rows * f, "expert_gate");
    add("expert_gate", 2 * rows * f);
    add("expert_up_base", 2 * rows * f, end);
    add("expert_up_lora_a", 2 * rows * r);
    add("expert_up_lora_out", 2 * rows * f, end);
    add("expert_up_lora_scaled", 2 * rows * f, "expert_up");
    add("expert_up", 2 * rows * f);
    add("expert_act", 2 * rows * f);
    add("expert_down_base", 2 * rows * h, end);
    add("expert_down_lora_a", 2 * rows * r);
    add("expert_down_lora_out", 2 * rows * h, end);
    add("expert_down_lora_scaled", 2 * rows * h, end);
    // out = h2_base + scaling * w2_lora_out: the routed output, until its fp32 copy is made.
    add("expert_out", 2 * rows * h, "routed_output_fp32");
  }
  if (ep <= 1) {
    // score_before_experts false (Qwen3-MoE, GLM-4-MoE): routed_output.to(float32), saved by
    // the multiply for the scores' gradient, ...
    add("routed_output_fp32", 4 * tk * h);
    // ... times top_scores (fp32), then .to(x.dtype) for scatter_add.
    add("routed_scaled_fp32", 4 * tk * h, "routed_output_bf16");
    add("routed_output_bf16", 2 * tk * h, "moe_block_output");
  }
  if (fs > 0) {
    v.insert(v.end(), {{"shared_gate", 2 * t * fs, true},
                       {"shared_up", 2 * t * fs, true},
                       {"shared_act", 2 * t * fs, true}});
  }
}

}  // namespace

std::vector<ActivationTensor> layer_activation_tensors(const ModelSpec& s, int64_t layer, double t,
                                                       int ep, int64_t expert_lora_rank) {
  const double h = double(s.hidden_size);
  const Heads a = heads_of(s);
  // Two norm inputs; q, k, v and the attention output (bf16); fp32 softmax statistics.
  std::vector<ActivationTensor> v = {
      {"attn_norm_input", 2 * t * h, false},  {"q", 2 * t * a.q * a.qk, false},
      {"k", 2 * t * a.kv * a.qk, false},      {"v", 2 * t * a.kv * a.v, false},
      {"attn_out", 2 * t * a.q * a.v, false}, {"softmax_lse", 4 * t * a.q, false},
      {"mlp_norm_input", 2 * t * h, true}};
  if (s.is_moe_layer(layer)) {
    moe_tensors(s, t, ep, expert_lora_rank, v);
  } else {
    const double f = double(s.intermediate_size);
    // The input is the checkpoint's (mlp target), saved either way; gate, up and act are
    // made inside mlp.forward.
    v.insert(v.end(), {{"mlp_input", 2 * t * h, true},
                       {"mlp_gate", 2 * t * f, true, nullptr, "mlp"},
                       {"mlp_up", 2 * t * f, true, nullptr, "mlp"},
                       {"mlp_act", 2 * t * f, true, nullptr, "mlp"}});
  }
  return v;
}

double layer_activation_bytes(const ModelSpec& s, int64_t layer, double t, int ep,
                              int64_t expert_lora_rank) {
  double bytes = 0;
  for (const ActivationTensor& a : layer_activation_tensors(s, layer, t, ep, expert_lora_rank))
    bytes += a.saved() ? a.bytes : 0;
  return bytes;
}

std::vector<CommBuffer> layer_a2a_buffers(const ModelSpec& s, int64_t layer, double t, bool ulysses,
                                          int cp, int ep) {
  std::vector<CommBuffer> v;
  if (ulysses && cp > 1) {
    const Heads a = heads_of(s);
    v.push_back({"ulysses_qkv_recv", 2 * t * (a.q * a.qk + a.kv * (a.qk + a.v)), false});
    v.push_back({"ulysses_out_recv", 2 * t * a.q * a.v, false});
  }
  if (ep > 1 && s.is_moe_layer(layer)) {
    const double copies = 2 * t * top_k(s) * double(s.hidden_size);
    v.push_back({"ep_dispatch_recv", copies, true});
    v.push_back({"ep_expert_out", copies, true});
    v.push_back({"ep_combine_recv", copies, true});
  }
  return v;
}

const std::vector<LmHeadTensor>& fused_lm_head_block_tensors() {
  static const std::vector<LmHeadTensor> v = {
      {"logits_bf16", 2, 5},      {"scaled_logits_fp32", 4, 5}, {"probs_fp32", 4, 5},
      {"grad_logits_fp32", 4, 5}, {"grad_scaled_fp32", 4, 5},   {"grad_logits_bf16", 2, 5}};
  return v;
}

const std::vector<LmHeadTensor>& unfused_lm_head_tensors() {
  static const std::vector<LmHeadTensor> v = {
      {"logits_bf16", 2, 1},        {"logits_fp32", 4, kHeldByTrainer}, {"log_softmax_fp32", 4, 4},
      {"grad_logprobs_fp32", 4, 4}, {"grad_logits_fp32", 4, 5},         {"grad_logits_bf16", 2, 5}};
  return v;
}

}  // namespace muonplan
