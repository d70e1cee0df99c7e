// An MoE layer's routed path as tensors (planner/src/cost/activation_sizes.h) under LoRA on the
// experts (MultiLoRAGroupedExperts' base and adapter outputs, ep 1), counted by hand, their
// lifetimes in the step timeline, and the ep > 1 table, which expert LoRA leaves as it is.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "cost/activation_sizes.h"
#include "cost/backward_temporaries.h"
#include "cost/step_timeline.h"
#include "test_plans.h"

using namespace muonplan;
using namespace muonplan::test;

namespace {

// The MoE block's rows of layer 0 (from moe_input on), by name, and their order.
struct Rows {
  std::map<std::string, ActivationTensor> by_name;
  std::vector<std::string> order;
  double saved = 0, all = 0;
};
Rows moe_rows(const ModelSpec& s, double t, int ep, int64_t lora_rank) {
  Rows r;
  bool moe = false;
  for (const ActivationTensor& a : layer_activation_tensors(s, 0, t, ep, lora_rank)) {
    moe = moe || std::string(a.name) == "moe_input";
    if (!moe) continue;
    r.by_name[a.name] = a;
    r.order.push_back(a.name);
    r.saved += a.saved() ? a.bytes : 0;
    r.all += a.bytes;
  }
  return r;
}
std::string freed_after(const Rows& r, const std::string& name) {
  const ActivationTensor& a = r.by_name.at(name);
  return a.freed_after ? a.freed_after : "(saved)";
}
}  // namespace

TEST_CASE("moe tensors: LoRA on the experts at ep 1, worked by hand", "[timeline][moe][lora]") {
  // Qwen3-30B-A3B: hidden 2048, 128 experts, top-8, expert width 768, no shared expert; rank
  // 16, 4096 tokens per rank (32768 routed copies, a bf16 copy of them 128 MiB).
  const ModelSpec s = model("qwen3-30b-a3b");
  const double t = 4096, tk = t * 8;
  // MultiLoRAGroupedExperts runs the grouped GEMMs on the gathered tokens as they are (no
  // vstack, no padding, no un-permute): the gather itself is what they save.
  const Rows r = moe_rows(s, t, 1, 16);
  CHECK(r.order == std::vector<std::string>{"moe_input",
                                            "router_probs",
                                            "routed_tokens",
                                            "expert_gate_base",
                                            "expert_gate_lora_a",
                                            "expert_gate_lora_out",
                                            "expert_gate_lora_scaled",
                                            "expert_gate",
                                            "expert_up_base",
                                            "expert_up_lora_a",
                                            "expert_up_lora_out",
                                            "expert_up_lora_scaled",
                                            "expert_up",
                                            "expert_act",
                                            "expert_down_base",
                                            "expert_down_lora_a",
                                            "expert_down_lora_out",
                                            "expert_down_lora_scaled",
                                            "expert_out",
                                            "routed_output_fp32",
                                            "routed_scaled_fp32",
                                            "routed_output_bf16"});
  CHECK(moe_grouped_rows(s, t, 1, 16) == tk);
  CHECK(r.by_name.at("routed_tokens").bytes == 128 * MiB);
  CHECK(r.by_name.at("routed_tokens").saved());
  // Per projection: base output, A's output (2 B x 32768 x 16 = 1 MiB, saved by B's GEMM),
  // B's output, its scaled copy (gone once the sum is made), the sum. gate and up are 768
  // wide (48 MiB), down 2048 (128 MiB).
  CHECK(r.by_name.at("expert_gate_base").bytes == 48 * MiB);
  CHECK(freed_after(r, "expert_gate_base") == "expert_out");
  CHECK(r.by_name.at("expert_gate_lora_a").bytes == 1 * MiB);
  CHECK(r.by_name.at("expert_gate_lora_a").saved());
  CHECK(r.by_name.at("expert_gate_lora_out").bytes == 48 * MiB);
  CHECK(freed_after(r, "expert_gate_lora_out") == "expert_out");
  CHECK(freed_after(r, "expert_gate_lora_scaled") == "expert_gate");
  CHECK(freed_after(r, "expert_up_lora_scaled") == "expert_up");
  CHECK(r.by_name.at("expert_down_base").bytes == 128 * MiB);
  CHECK(r.by_name.at("expert_down_lora_out").bytes == 128 * MiB);
  CHECK(freed_after(r, "expert_down_lora_scaled") == "expert_out");
  // The sum is the routed output at ep 1, until its fp32 copy is made.
  CHECK(r.by_name.at("expert_out").bytes == 128 * MiB);
  CHECK(freed_after(r, "expert_out") == "routed_output_fp32");
  // Saved: moe_input 16, router_probs (fp32, 4096 x 128) 2, the gathered tokens 128, three A
  // outputs 1 each, gate, up, act 48 each, routed_output_fp32 256 MiB.
  CHECK(r.saved == (16 + 2 + 128 + 3 + 3 * 48 + 256) * MiB);
  CHECK(layer_activation_bytes(s, 0, t, 1, 16) - r.saved ==
        layer_activation_bytes(s, 0, t, 1) - moe_rows(s, t, 1, 0).saved);  // attention's alike
  // Temporaries: gate's and up's base, adapter and scaled outputs (6 x 48), down's (3 x 128),
  // the sum 128, the scaled fp32 256 and its bf16 cast 128 MiB.
  CHECK(r.all - r.saved == (6 * 48 + 3 * 128 + 128 + 256 + 128) * MiB);
  // Every routed row is the routed_experts target's (recomputed under it).
  for (const auto& [name, a] : r.by_name)
    if (name != "moe_input" && name != "router_probs")
      CHECK(std::string(a.ac_target) == "routed_experts");
  // The experts' backward sums its input gradients over the unpadded rows (128 MiB); without
  // expert adapters over the wrapper's padded rows (128 experts x 8 more: 2 B x 1024 x 2048
  // = 4 MiB more).
  LoraAdapted experts;
  experts.rank = 16;
  experts.experts = true;
  LoraAdapted none;
  auto proj_input_grad = [&](const LoraAdapted& lora) {
    for (const BackwardTemporary& b :
         layer_backward_temporaries(s, 0, t, 1, AttentionKernel::fa3, lora))
      if (std::string(b.name) == "mlp_proj_input_grad") return b.bytes;
    return -1.0;
  };
  CHECK(proj_input_grad(experts) == 128 * MiB);
  CHECK(proj_input_grad(none) == 132 * MiB);
}

TEST_CASE("moe tensors: expert LoRA leaves the ep > 1 table as it is", "[timeline][moe][lora]") {
  // At ep > 1 the routed copies are the all-to-all buffers, not rows (activation_sizes.cc says
  // why): the rows with and without adapters are the same, over the unpadded copies.
  const ModelSpec s = model("qwen3-30b-a3b");
  const double t = 4096, tk = t * 8;
  const Rows plain = moe_rows(s, t, 2, 0), lora = moe_rows(s, t, 2, 16);
  CHECK(lora.order == std::vector<std::string>{"moe_input", "router_probs", "routed_tokens",
                                               "expert_gate", "expert_up", "expert_act"});
  CHECK(plain.order == lora.order);
  CHECK(lora.saved == plain.saved);
  CHECK(lora.all == plain.all);
  // Saved: moe_input 16, router_probs 2, the routed copies 128, gate, up, act 48 MiB each.
  CHECK(lora.saved == (16 + 2 + 128 + 3 * 48) * MiB);
  CHECK(moe_grouped_rows(s, t, 2, 16) == tk);
  CHECK(moe_grouped_rows(s, t, 2, 0) == tk);
  // ep 1 without adapters: the wrapper pads each of the 128 experts by 8 rows.
  CHECK(moe_grouped_rows(s, t, 1, 0) == tk + 1024);
}

TEST_CASE("moe timeline: the expert adapters' rows in a plan", "[timeline][moe][lora]") {
  // tiny-moe on one rank, LoRA rank 8 on every default target (the experts included).
  PlanOptions o = tiny_workload();
  o.lora.rank = 8;
  o.lora.adapters = 1;
  auto timeline = [](const PlanOptions& po) {
    const Plan plan = plan_fixed("tiny-moe", 1, OffloadMode::none, po);
    return build_step_timeline(model("tiny-moe"), plan.inventory, plan.options, plan.chunks,
                               TimelineInputs{}, 1);
  };
  const StepTimeline tl = timeline(o);
  auto event = [](const StepTimeline& x, const std::string& name, bool alloc) {
    for (size_t i = 0; i < x.events.size(); ++i) {
      const TimelineEvent& e = x.events[i];
      if (e.alloc == alloc && x.tensors[size_t(e.tensor)].name() == name) return int(i);
    }
    return -1;
  };
  // Layer 1 is the first MoE layer: the adapters' outputs are its unit's, each freed as the
  // tensor its lifetime names is made; no wrapper copy at ep 1 under expert LoRA.
  const int base = event(tl, "layers.1.expert_gate_base", true);
  REQUIRE(base >= 0);
  const int sum = event(tl, "layers.1.expert_out", true);
  REQUIRE(sum > base);
  CHECK(event(tl, "layers.1.expert_gate_base", false) > sum);
  const int gate = event(tl, "layers.1.expert_gate", true);
  CHECK(event(tl, "layers.1.expert_gate_lora_scaled", false) > gate);
  CHECK(event(tl, "layers.1.expert_gate_lora_scaled", false) <
        event(tl, "layers.1.expert_up_base", true));
  CHECK(event(tl, "layers.1.expert_down_lora_out", true) >= 0);
  CHECK(event(tl, "layers.1.permute_vstack", true) == -1);
  CHECK(event(tl, "layers.1.unpermute_buffer", true) == -1);
  // The dense layer 0 has no expert rows; without LoRA layer 1 has the wrapper's copies.
  CHECK(event(tl, "layers.0.expert_gate_base", true) == -1);
  PlanOptions plain = tiny_workload();
  const StepTimeline tl0 = timeline(plain);
  CHECK(event(tl0, "layers.1.permute_vstack", true) >= 0);
  CHECK(event(tl0, "layers.1.expert_gate_base", true) == -1);
}
