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

std::vector<ActivationTensor> layer_activation_tensors(const ModelSpec& s, int64_t layer, double t,
                                                       int ep) {
  const double h = double(s.hidden_size);
  const Heads a = heads_of(s);
  // Two norm inputs; q, k, v and the attention output (bf16); fp32 softmax statistics.
  std::vector<ActivationTensor> v = {
      {"attn_norm_input", 2 * t * h, false},  {"q", 2 * t * a.q * a.qk, false},
      {"k", 2 * t * a.kv * a.qk, false},      {"v", 2 * t * a.kv * a.v, false},
      {"attn_out", 2 * t * a.q * a.v, false}, {"softmax_lse", 4 * t * a.q, false},
      {"mlp_norm_input", 2 * t * h, true}};
  if (s.is_moe_layer(layer)) {
    // prime-rl's MoE (trainer/models/layers/moe.py, torchtitan's; the rows' source lines): the
    // router input and its fp32 probabilities; the routed path at hidden width, per routed
    // copy (t x top-k rows); the experts' SwiGLU tensors; the shared experts'.
    const double k = top_k(s), tk = t * k;
    const double f = double(s.moe.intermediate_size), fs = double(s.moe.shared_intermediate_size);
    // torchtitan's expert_parallel wrapper permutes even at ep 1: generate_permute_indices pads
    // every local expert's rows to a multiple of TOKEN_GROUP_ALIGN_SIZE_M, x.shape[0] +
    // experts x that many rows in all.
    const double padded = tk + double(s.moe.num_experts) * kMoeAlignRows;
    // The routed path runs inside _run_routed_experts (the gather, the experts with their
    // expert_parallel wrapper, the score multiply): the routed_experts target's function.
    // Its input (moe_input), the router's probabilities and the shared experts are outside.
    const char* kRouted = "routed_experts";
    if (ep > 1) {
      // Expert parallelism: the dispatch's received tokens, the experts' output and the
      // combine's received tokens are the all-to-all buffers; the saved copy the grouped GEMMs
      // read is one more (as before this table listed the routed path). Not added here: the
      // ep-1 wrapper's copies, and the fp32 routed output, which on the measured
      // GLM-4.5-Air run (ep 8, cp 4) would put the peak 15% over (docs/validation.md).
      v.insert(v.end(), {{"moe_input", 2 * t * h, true},
                         {"router_probs", 4 * t * s.moe.num_experts, true},
                         {"routed_tokens", 2 * tk * h, true, nullptr, kRouted},
                         {"expert_gate", 2 * tk * f, true, nullptr, kRouted},
                         {"expert_up", 2 * tk * f, true, nullptr, kRouted},
                         {"expert_act", 2 * tk * f, true, nullptr, kRouted}});
    } else {
      v.insert(v.end(),
               {{"moe_input", 2 * t * h, true},
                {"router_probs", 4 * t * s.moe.num_experts, true},
                // _run_routed_experts: routed_input = torch.gather(x, 0, routed_indices); the
                // local name holds it until the function returns.
                {"routed_input", 2 * tk * h, true, "routed_output_bf16", kRouted},
                // expert_parallel: x = torch.vstack((x, x.new_zeros(...))), one zero row more.
                {"permute_vstack", 2 * (tk + 1) * h, true, "routed_tokens", kRouted},
                // expert_parallel: x = x[permuted_indices, :], saved by the grouped GEMMs.
                {"routed_tokens", 2 * padded * h, true, nullptr, kRouted},
                {"expert_gate", 2 * tk * f, true, nullptr, kRouted},
                {"expert_up", 2 * tk * f, true, nullptr, kRouted},
                {"expert_act", 2 * tk * f, true, nullptr, kRouted},
                // _run_experts_grouped_mm: out = torch._grouped_mm(h, w2, ...), padded rows.
                {"expert_out", 2 * padded * h, true, "unpermute_buffer", kRouted},
                // expert_parallel: out_unpermuted = out.new_empty(input_shape), filled by index.
                {"unpermute_buffer", 2 * (tk + 1) * h, true, "routed_output_fp32", kRouted},
                // score_before_experts false (Qwen3-MoE, GLM-4-MoE): routed_output.to(float32),
                // saved by the multiply for the scores' gradient, ...
                {"routed_output_fp32", 4 * tk * h, true, nullptr, kRouted},
                // ... times top_scores (fp32), then .to(x.dtype) for scatter_add.
                {"routed_scaled_fp32", 4 * tk * h, true, "routed_output_bf16", kRouted},
                {"routed_output_bf16", 2 * tk * h, true, "moe_block_output", kRouted}});
    }
    if (fs > 0) {
      v.insert(v.end(), {{"shared_gate", 2 * t * fs, true},
                         {"shared_up", 2 * t * fs, true},
                         {"shared_act", 2 * t * fs, true}});
    }
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

double layer_activation_bytes(const ModelSpec& s, int64_t layer, double t, int ep) {
  double bytes = 0;
  for (const ActivationTensor& a : layer_activation_tensors(s, layer, t, ep))
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
