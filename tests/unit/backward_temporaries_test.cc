// A decoder layer's backward temporaries (planner/src/cost/backward_temporaries.h): each row's
// bytes on a hand-worked layer, and their lifetimes in the step timeline.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "cost/backward_temporaries.h"
#include "cost/step_timeline.h"
#include "test_plans.h"

using namespace muonplan;
using namespace muonplan::test;

namespace {

std::map<std::string, BackwardTemporary> rows(const ModelSpec& s, double t, AttentionKernel k,
                                              const LoraAdapted& lora = {}) {
  std::map<std::string, BackwardTemporary> m;
  for (const BackwardTemporary& b : layer_backward_temporaries(s, 0, t, 1, k, lora))
    m.emplace(b.name, b);
  return m;
}
}  // namespace

TEST_CASE("backward temporaries: Qwen3-4B at 16K tokens, worked by hand", "[timeline]") {
  // Qwen3-4B: hidden 2560, 32 query heads and 8 kv heads of 128, SwiGLU width 9728.
  const ModelSpec s = model("qwen3-4b");
  const double t = 16384;
  const auto fa3 = rows(s, t, AttentionKernel::fa3);
  // FlashAttention-3: dq_accum fp32 [32 heads, 16384 x 128] = 256 MiB; softmax_d and
  // softmax_lse_log2 fp32 [32, 16384] = 2 x 2 MiB; GQA's dk_accum and dv_accum fp32
  // [8, 16384, 128] = 2 x 64 MiB; all for the kernel's call (at v's gradient).
  CHECK(fa3.at("attn_bwd_dq_accum").bytes == 256 * MiB);
  CHECK(fa3.at("attn_bwd_softmax_d").bytes == 4 * MiB);
  CHECK(fa3.at("attn_bwd_dkv_accum").bytes == 128 * MiB);
  CHECK(std::string(fa3.at("attn_bwd_dq_accum").first) == "v");
  CHECK(std::string(fa3.at("attn_bwd_dq_accum").last) == "v");
  // The kernel's dq (bf16 16384 x 4096 = 128 MiB) until q's gradient, dk (16384 x 1024 = 32
  // MiB) until k's; the q/k/v projections' summed input gradient (16384 x 2560 = 80 MiB) until
  // the layer input's.
  CHECK(fa3.at("attn_bwd_dq").bytes == 128 * MiB);
  CHECK(std::string(fa3.at("attn_bwd_dq").last) == "q");
  CHECK(fa3.at("attn_bwd_dk").bytes == 32 * MiB);
  CHECK(std::string(fa3.at("attn_bwd_dk").last) == "k");
  CHECK(fa3.at("attn_proj_input_grad_sum").bytes == 80 * MiB);
  CHECK(std::string(fa3.at("attn_proj_input_grad_sum").last) == kLayerInputGrad);
  // SwiGLU: a third [16384, 9728] bf16 gradient (304 MiB) from up's gradient to the input's;
  // gate_proj's and up_proj's input gradients side by side (80 MiB) at the input's.
  CHECK(fa3.at("mlp_swiglu_bwd").bytes == 304 * MiB);
  CHECK(std::string(fa3.at("mlp_swiglu_bwd").first) == "mlp_up");
  CHECK(std::string(fa3.at("mlp_swiglu_bwd").last) == "mlp_input");
  CHECK(fa3.at("mlp_proj_input_grad").bytes == 80 * MiB);
  CHECK(fa3.size() == 8);  // no LoRA rows without adapters
  // FlashAttention-2: dq_accum [16384, 32, 128] fp32 (128 is already a multiple of 32), one
  // fp32 softmax_d (2 MiB), and GQA's bf16 dk_expanded and dv_expanded [16384, 32, 128]
  // (2 x 128 MiB) in place of the fp32 accumulators.
  const auto fa2 = rows(s, t, AttentionKernel::fa2);
  CHECK(fa2.at("attn_bwd_dq_accum").bytes == 256 * MiB);
  CHECK(fa2.at("attn_bwd_softmax_d").bytes == 2 * MiB);
  CHECK(fa2.at("attn_bwd_dkv_expanded").bytes == 256 * MiB);
  CHECK(fa2.count("attn_bwd_dkv_accum") == 0);
  // LoRA on every linear: one adapted linear's grad * scaling [t, out] and lora_x's input
  // gradient [t, in] at a time: o_proj 16384 x (4096 + 2560) x 2 B = 208 MiB, the q/k/v
  // projections' largest (q: 2560 -> 4096) the same, down_proj 16384 x (9728 + 2560) x 2 B =
  // 384 MiB, gate/up the same.
  LoraAdapted all;
  all.rank = 16;
  all.q = all.k = all.v = all.o = all.gate = all.up = all.down = true;
  const auto lora = rows(s, t, AttentionKernel::fa3, all);
  CHECK(lora.at("lora_o_proj_bwd").bytes == 208 * MiB);
  CHECK(lora.at("lora_qkv_proj_bwd").bytes == 208 * MiB);
  CHECK(lora.at("lora_down_proj_bwd").bytes == 384 * MiB);
  CHECK(std::string(lora.at("lora_down_proj_bwd").first) == "mlp_act");
  CHECK(lora.at("lora_gate_up_proj_bwd").bytes == 384 * MiB);
}

TEST_CASE("backward temporaries: an MoE layer's experts' SwiGLU rows", "[timeline]") {
  // Qwen3-30B-A3B: 32 query heads, 4 kv heads (GQA), hidden 2048, 128 experts top-8 of width
  // 768; at ep 1 the grouped GEMMs' input is padded by 8 rows per expert.
  const ModelSpec moe = model("qwen3-30b-a3b");
  const double t = 4096;
  const auto r = rows(moe, t, AttentionKernel::fa3);
  CHECK(r.at("expert_swiglu_bwd").bytes == 2 * t * 8 * 768);
  CHECK(std::string(r.at("expert_swiglu_bwd").last) == "routed_tokens");
  CHECK(r.at("mlp_proj_input_grad").bytes == 2 * (t * 8 + 128 * 8) * 2048);
  CHECK(r.count("mlp_swiglu_bwd") == 0);
}

TEST_CASE("backward temporaries: each lives from its first tensor's gradient to its last's",
          "[timeline]") {
  const PlanOptions o = tiny_workload();
  const Plan plan = plan_fixed("tiny-dense", 1, OffloadMode::none, o);
  TimelineInputs in;
  in.step_transient = plan.predicted.gpu_transient_bytes;
  in.attention = AttentionKernel::fa3;
  const StepTimeline tl =
      build_step_timeline(model("tiny-dense"), plan.inventory, plan.options, plan.chunks, in);
  auto event = [&](const std::string& name, bool alloc) {
    for (size_t i = 0; i < tl.events.size(); ++i) {
      const TimelineEvent& e = tl.events[i];
      if (e.alloc == alloc && tl.tensors[size_t(e.tensor)].name() == name) return int(i);
    }
    return -1;
  };
  // The kernel's dq: made before v's gradient, freed once q's is made.
  const int dq = event("layers.0.attn_bwd_dq", true);
  REQUIRE(dq >= 0);
  CHECK(dq < event("layers.0.v.grad", true));
  CHECK(event("layers.0.q.grad", true) < event("layers.0.attn_bwd_dq", false));
  CHECK(event("layers.0.attn_bwd_dq", false) < event("layers.0.input.grad", true));
  // The workspace goes with v's gradient's step; the SwiGLU's third gradient spans up to the
  // MLP input's.
  CHECK(event("layers.0.attn_bwd_dq_accum", false) < event("layers.0.k.grad", true));
  CHECK(event("layers.0.mlp_swiglu_bwd", true) < event("layers.0.mlp_up.grad", true));
  CHECK(event("layers.0.mlp_input.grad", true) < event("layers.0.mlp_swiglu_bwd", false));
  // Every temporary is freed.
  std::vector<int> live(tl.tensors.size(), 0);
  for (const TimelineEvent& e : tl.events) live[size_t(e.tensor)] += e.alloc ? 1 : -1;
  for (size_t i = 0; i < live.size(); ++i) {
    const std::string_view k = tl.tensors[i].kind;
    if (k.rfind("attn_bwd", 0) == 0 || k == "swiglu_bwd_third_grad" || k == "proj_input_grad_sum")
      CHECK(live[i] == 0);
  }
}
