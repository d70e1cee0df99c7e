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

double top_k(const ModelSpec& s) {
  return double(std::max<int64_t>(1, s.moe.experts_per_token));
}

std::vector<ActivationTensor> layer_activation_tensors(const ModelSpec& s, int64_t layer,
                                                       double t) {
  const double h = double(s.hidden_size);
  const Heads a = heads_of(s);
  // Two norm inputs; q, k, v and the attention output (bf16); fp32 softmax statistics.
  std::vector<ActivationTensor> v = {
      {"attn_norm_input", 2 * t * h, false},  {"q", 2 * t * a.q * a.qk, false},
      {"k", 2 * t * a.kv * a.qk, false},      {"v", 2 * t * a.kv * a.v, false},
      {"attn_out", 2 * t * a.q * a.v, false}, {"softmax_lse", 4 * t * a.q, false},
      {"mlp_norm_input", 2 * t * h, true}};
  if (s.is_moe_layer(layer)) {
    // Per routed copy (top-k): its hidden state and three ffn-wide tensors (SwiGLU); the shared
    // experts' three; the router probabilities (fp32); the MLP input.
    const double k = top_k(s);
    const double f = double(s.moe.intermediate_size), fs = double(s.moe.shared_intermediate_size);
    v.insert(v.end(), {{"moe_input", 2 * t * h, true},
                       {"router_probs", 4 * t * s.moe.num_experts, true},
                       {"routed_tokens", 2 * t * k * h, true},
                       {"expert_gate", 2 * t * k * f, true},
                       {"expert_up", 2 * t * k * f, true},
                       {"expert_act", 2 * t * k * f, true}});
    if (fs > 0) {
      v.insert(v.end(), {{"shared_gate", 2 * t * fs, true},
                         {"shared_up", 2 * t * fs, true},
                         {"shared_act", 2 * t * fs, true}});
    }
  } else {
    const double f = double(s.intermediate_size);
    v.insert(v.end(), {{"mlp_input", 2 * t * h, true},
                       {"mlp_gate", 2 * t * f, true},
                       {"mlp_up", 2 * t * f, true},
                       {"mlp_act", 2 * t * f, true}});
  }
  return v;
}

double layer_activation_bytes(const ModelSpec& s, int64_t layer, double t) {
  double bytes = 0;
  for (const ActivationTensor& a : layer_activation_tensors(s, layer, t)) bytes += a.bytes;
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

double lm_head_peak_bytes_per_elem(const std::vector<LmHeadTensor>& tensors) {
  double live = 0, peak = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    live += tensors[i].bytes_per_elem;
    peak = std::max(peak, live);
    for (const LmHeadTensor& t : tensors) {
      if (t.freed_after == int(i)) live -= t.bytes_per_elem;
    }
  }
  return peak;
}

}  // namespace muonplan
