// A decoder layer's backward temporaries, row by row (backward_temporaries.h). Sizes are bf16
// (2 B) unless a row says fp32 (4 B); t tokens per rank.
#include "cost/backward_temporaries.h"

#include <algorithm>
#include <cmath>

#include "cost/activation_sizes.h"

namespace muonplan {

namespace {

// The head dimension the kernel's fp32 accumulators are padded to. FlashAttention-2
// (csrc/flash_attn/flash_api.cpp, mha_varlen_bwd): a multiple of 32 up to 192, else 256.
// FlashAttention-3 (hopper/flash_api.cpp, round_up_headdim): 64, 96, 128, 192 or 256.
double rounded_head_dim(double d, AttentionKernel k) {
  if (k == AttentionKernel::fa3) {
    for (double b : {64.0, 96.0, 128.0, 192.0})
      if (d <= b) return b;
    return 256;
  }
  return d <= 192 ? std::ceil(d / 32) * 32 : 256;
}

// The attention kernel's backward (one call, at the gradient of v: autograd reaches the kernel's
// node once o_proj's backward has made the output's gradient). PyTorch's SDPA flash backend is
// FlashAttention-2's code, and HF's sdpa path repeats k and v to every query head before it.
void attention_rows(const ModelSpec& s, double t, AttentionKernel k,
                    std::vector<BackwardTemporary>& v) {
  const Heads a = heads_of(s);
  const double dq = rounded_head_dim(a.qk, k), dv = rounded_head_dim(a.v, k);
  // mha_varlen_bwd (FA2) / mha_bwd (FA3): dq_accum, fp32, [total_q (+ 128 per sequence),
  // heads, head dim rounded]; every query tile atomically adds its dQ into it.
  v.push_back({"attn_bwd_dq_accum", "attn_bwd_dq_accum", 4 * t * a.q * dq, "v", "v"});
  // softmax_d, fp32 [heads, total_q]: rowsum(dO * O), the kernel's first pass. FA3 also keeps
  // softmax_lse_log2, fp32, the same shape.
  v.push_back({"attn_bwd_softmax_d", "attn_bwd_softmax_stats",
               (k == AttentionKernel::fa3 ? 8 : 4) * t * a.q, "v", "v"});
  if (a.kv < a.q) {
    if (k == AttentionKernel::fa3) {
      // GQA: dk_accum and dv_accum, fp32 zeros [kv heads, total_k rounded, head dim rounded],
      // summed over each group's query heads in the kernel.
      v.push_back({"attn_bwd_dkv_accum", "attn_bwd_dkv_accum", 4 * t * a.kv * (dq + dv), "v", "v"});
    } else {
      // GQA: dk_expanded and dv_expanded, bf16 [total_k, heads, head dim], then at::sum_out
      // over each group into dk and dv.
      v.push_back(
          {"attn_bwd_dkv_expanded", "attn_bwd_dkv_expanded", 2 * t * a.q * (a.qk + a.v), "v", "v"});
    }
  }
  // The kernel returns dq, dk and dv at once (the timeline's v gradient is dv). dq and dk go
  // through the rotary embedding's and the q/k norms' backward (Qwen3's q_norm, k_norm), each a
  // new tensor: the kernel's dq lives until q's gradient (q_proj's output) is made, dk until k's.
  v.push_back({"attn_bwd_dq", "attn_bwd_dq_dk", 2 * t * a.q * a.qk, "v", "q"});
  v.push_back({"attn_bwd_dk", "attn_bwd_dq_dk", 2 * t * a.kv * a.qk, "v", "k"});
  // q_proj, k_proj and v_proj each make an input gradient [t, hidden]; autograd's InputBuffer
  // sums them into the first (in place), so two exist while the sum runs, and the sum lives
  // until the input norm's backward has made the layer input's gradient.
  v.push_back({"attn_proj_input_grad_sum", "proj_input_grad_sum", 2 * t * double(s.hidden_size),
               "q", kLayerInputGrad});
}

// A SwiGLU block, act(gate) * up then the down projection: `gate`, `up` the saved names of its
// two projections' outputs, `input` the saved tensor whose gradient sums theirs (or "" when it
// is not in the layer's table), `rows` x `width` the intermediate, `in_rows` x `hidden` the
// projections' input. derivatives.yaml: mul's self: grad * other, other: grad * self;
// silu_backward(grad, self). The chain makes the gradient of act(gate) * up, then of up, then of
// gate, each freeing the one before; the backward holds three at once (the product's gradient
// until both factors' are made, or, unfused, up's while act's and gate's are made): one more
// [rows, width] from up's gradient to the input's.
void swiglu_rows(const char* prefix_kind, const char* up, const char* gate, const char* input,
                 double rows, double width, double in_rows, double hidden,
                 std::vector<BackwardTemporary>& v) {
  v.push_back({prefix_kind, "swiglu_bwd_third_grad", 2 * rows * width, up, *input ? input : gate});
  // gate_proj's and up_proj's input gradients, both [in_rows, hidden], before their sum.
  if (*input)
    v.push_back({"mlp_proj_input_grad", "proj_input_grad_sum", 2 * in_rows * hidden, input, input});
}

// prime-rl's MultiLoRALinear (lora/multi_linear.py): out = base(x) + scaling * lora_out. Its
// backward makes grad * scaling ([t, out], the mul's self gradient), the grouped GEMMs' input
// gradient of lora_x ([t, in]) beside the base linear's ([t, in]), summed by autograd. One linear
// at a time: at step `at`, the largest of the adapted ones listed.
void lora_rows(const char* name, const char* at, double t, double in, double out,
               std::vector<BackwardTemporary>& v) {
  v.push_back({name, "lora_bwd_grads", 2 * t * (in + out), at, at});
}

}  // namespace

std::vector<BackwardTemporary> layer_backward_temporaries(const ModelSpec& s, int64_t layer,
                                                          double t, int ep, AttentionKernel kernel,
                                                          const LoraAdapted& lora) {
  std::vector<BackwardTemporary> v;
  const double h = double(s.hidden_size);
  const Heads a = heads_of(s);
  attention_rows(s, t, kernel, v);
  if (lora.rank > 0) {
    if (lora.o) lora_rows("lora_o_proj_bwd", "attn_out", t, a.q * a.v, h, v);
    double qkv_out = 0;
    if (lora.q) qkv_out = std::max(qkv_out, a.q * a.qk);
    if (lora.k) qkv_out = std::max(qkv_out, a.kv * a.qk);
    if (lora.v) qkv_out = std::max(qkv_out, a.kv * a.v);
    if (qkv_out > 0) lora_rows("lora_qkv_proj_bwd", "q", t, h, qkv_out, v);
  }
  if (s.is_moe_layer(layer)) {
    const double k = top_k(s), tk = t * k;
    const double f = double(s.moe.intermediate_size), fs = double(s.moe.shared_intermediate_size);
    const double padded = moe_grouped_rows(s, t, ep, lora.expert_rank());
    swiglu_rows("expert_swiglu_bwd", "expert_up", "expert_gate", "routed_tokens", tk, f, padded, h,
                v);
    if (fs > 0) swiglu_rows("shared_swiglu_bwd", "shared_up", "shared_gate", "", t, fs, t, h, v);
  } else {
    const double f = double(s.intermediate_size);
    swiglu_rows("mlp_swiglu_bwd", "mlp_up", "mlp_gate", "mlp_input", t, f, t, h, v);
    if (lora.rank > 0) {
      if (lora.down) lora_rows("lora_down_proj_bwd", "mlp_act", t, f, h, v);
      if (lora.gate || lora.up) lora_rows("lora_gate_up_proj_bwd", "mlp_input", t, h, f, v);
    }
  }
  return v;
}

}  // namespace muonplan
