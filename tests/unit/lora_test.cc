// LoRA (lora.h, docs/planner.md "LoRA"): the adapters' inventory and their memory and time
// terms against hand-worked figures.
#include <catch2/catch.hpp>

#include "muonplan/base/error.h"
#include "muonplan/planner/lora.h"
#include "test_plans.h"

using namespace muonplan;
using namespace muonplan::test;  // model, topology and plan helpers (test_plans.h)

namespace {

LoraConfig rank16(int64_t adapters = 1) {
  LoraConfig l;
  l.rank = 16;
  l.adapters = adapters;
  return l;
}

const ParamTensor& named(const std::vector<ParamTensor>& ts, const std::string& name) {
  for (const ParamTensor& t : ts) {
    if (t.name == name) return t;
  }
  FAIL("no tensor " << name);
  static const ParamTensor none;
  return none;
}

}  // namespace

TEST_CASE("lora: qwen3-0.6b rank 16 adapters, counted by hand", "[lora]") {
  const ParamInventory base = build_inventory(model("qwen3-0.6b"));
  ParamInventory inv = base;
  apply_lora(inv, rank16());
  // Qwen3-0.6B: hidden 1024, 16 q heads and 8 kv heads of 128, MLP 3072, 28 layers. Each of
  // the 7 default targets gets A [16, in] and B [out, 16], rank x (in + out) parameters:
  // q 1024 + 2048, k 1024 + 1024, v 1024 + 1024, o 2048 + 1024, gate 1024 + 3072,
  // up 1024 + 3072, down 3072 + 1024: 22528 x 16 = 360448 per layer, 10,092,544 in all.
  CHECK(inv.summarize().params_total == 10092544);
  CHECK(inv.tensors.size() == 28 * 7 * 2);
  CHECK(inv.summarize().params_muon == 0);  // AdamW trains them
  // Every base tensor is frozen, the norms and the tied embedding too; none is trained.
  CHECK(inv.frozen.size() == base.tensors.size());
  CHECK(inv.frozen.front().name == base.tensors.front().name);
  const ParamTensor& a = named(inv.tensors, "model.layers.0.self_attn.q_proj.lora_A.0");
  const ParamTensor& b = named(inv.tensors, "model.layers.0.self_attn.q_proj.lora_B.0");
  CHECK(a.shape == std::vector<int64_t>{16, 1024});
  CHECK(b.shape == std::vector<int64_t>{2048, 16});
  CHECK(a.layer == 0);
  // Four slots (prime-rl's max_concurrent_runs 4): four sets.
  ParamInventory four = base;
  apply_lora(four, rank16(4));
  CHECK(four.summarize().params_total == 4 * 10092544);
  CHECK(named(four.tensors, "model.layers.27.mlp.down_proj.lora_B.3").shape ==
        std::vector<int64_t>{1024, 16});
}

TEST_CASE("lora: experts get per-expert stacks, the router none, and targets restrict", "[lora]") {
  ParamInventory inv = build_inventory(model("tiny-moe"));
  const ModelSpec spec = model("tiny-moe");
  apply_lora(inv, rank16());
  const int64_t e = spec.moe.num_experts, h = spec.hidden_size;
  // The layer after the dense ones is a MoE layer.
  const std::string p = "model.layers." + std::to_string(spec.moe.first_dense_layers) + ".mlp.";
  // tiny-moe fuses gate and up: each partition is its own module to prime-rl (w1, w3).
  CHECK(named(inv.tensors, p + "experts.gate_up_proj.gate.lora_A.0").shape ==
        std::vector<int64_t>{e, 16, h});
  CHECK(named(inv.tensors, p + "experts.gate_up_proj.up.lora_B.0").shape ==
        std::vector<int64_t>{e, spec.moe.intermediate_size, 16});
  CHECK(named(inv.tensors, p + "experts.down_proj.lora_B.0").shape ==
        std::vector<int64_t>{e, h, 16});
  CHECK(named(inv.tensors, p + "experts.down_proj.lora_B.0").stack_dim == 0);
  for (const ParamTensor& t : inv.tensors) CHECK(t.name.find("mlp.gate.") == std::string::npos);
  // Attention only: q and v, rank x (in + out) each per layer.
  ParamInventory qv = build_inventory(spec);
  LoraConfig l = rank16();
  l.target_modules = {"q_proj", "v_proj"};
  apply_lora(qv, l);
  const AttentionSpec& at = spec.attention;
  const int64_t q = at.num_heads * at.head_dim, kv = at.num_kv_heads * at.head_dim;
  CHECK(qv.summarize().params_total == spec.num_layers * 16 * ((h + q) + (h + kv)));
}

TEST_CASE("lora: refusals name the flag", "[lora]") {
  CHECK_THROWS_WITH(check_lora(rank16(), OptimizerKind::muon, "--optimizer"),
                    Catch::Contains("Muon on LoRA adapters is not planned"));
  CHECK_NOTHROW(check_lora(rank16(), OptimizerKind::adamw, "--optimizer"));
  CHECK_NOTHROW(check_lora(LoraConfig{}, OptimizerKind::muon, "--optimizer"));
  CHECK_THROWS_WITH(parse_lora_targets(".*proj", "--lora-targets"),
                    Catch::Contains("regex pattern"));
  CHECK(parse_lora_targets("q_proj,experts", "--lora-targets") ==
        std::vector<std::string>{"q_proj", "experts"});
}

TEST_CASE("lora: memory terms of qwen3-0.6b on one H200 against hand figures", "[lora]") {
  PlanOptions o;
  o.optimizer = OptimizerKind::adamw;
  o.lora = rank16();
  const Plan lora = plan_fixed("qwen3-0.6b", 1, OffloadMode::none, o);
  const Prediction& p = lora.predicted;
  const double adapters = 10092544.0 / 8;  // FSDP over the node's 8 ranks
  const double frozen = double(build_inventory(model("qwen3-0.6b")).summarize().params_total) / 8;
  // Adapters: fp32 master, fp32 gradient, AdamW's two fp32 moments; the base: 4 B, nothing else.
  CHECK(term(p.gpu_persistent_bytes, "params_fp32").value == Approx(4 * adapters).epsilon(0.02));
  CHECK(term(p.gpu_persistent_bytes, "grads_fp32").value == Approx(4 * adapters).epsilon(0.02));
  CHECK(term(p.gpu_persistent_bytes, "adamw_moments").value == Approx(8 * adapters).epsilon(0.02));
  CHECK(term(p.gpu_persistent_bytes, "frozen_params").value == Approx(4 * frozen).epsilon(0.01));
  // The optimizer step covers the adapters only: its chunks hold 10,092,544 elements.
  int64_t stepped = 0;
  for (const Chunk& c : lora.chunks.chunks) stepped += c.params;
  CHECK(stepped == 10092544);
  // Four slots: four times the adapter state, the frozen weights once.
  o.lora.adapters = 4;
  const Prediction& p4 = plan_fixed("qwen3-0.6b", 1, OffloadMode::none, o).predicted;
  CHECK(term(p4.gpu_persistent_bytes, "adamw_moments").value ==
        Approx(4 * 8 * adapters).epsilon(0.02));
  CHECK(term(p4.gpu_persistent_bytes, "frozen_params").value ==
        term(p.gpu_persistent_bytes, "frozen_params").value);
}

TEST_CASE("lora: a training step's frozen weights: no weight-gradient GEMMs, gathered, not reduced",
          "[lora]") {
  PlanOptions o;
  o.optimizer = OptimizerKind::adamw;
  o.runtime = RuntimeKind::muonplan;
  o.workload = Workload{8 * 4096, 4096, 1, false, false, 0};  // no AC: 3 GEMMs vs 2 per weight
  const Plan full = plan_fixed("qwen3-0.6b", 1, OffloadMode::none, o);
  o.lora = rank16();
  const Plan lora = plan_fixed("qwen3-0.6b", 1, OffloadMode::none, o);
  // A trained weight costs three GEMMs (forward, input and weight gradient), a frozen one two.
  // The weight gradient's output is the small [out, in] matrix (qwen3-0.6b: 1024 wide, 32 tiles
  // of 128 x 256 on 132 SMs), so it is the slowest of the three and the frozen share is under
  // 2/3 (0.555 here); the adapters add time of their own.
  const double g_full = term(full.predicted.training_terms_s, "gemm").value;
  const double g_lora = term(lora.predicted.training_terms_s, "gemm").value;
  CHECK(g_lora / g_full > 0.45);
  CHECK(g_lora / g_full < 0.66);
  CHECK(term(lora.predicted.training_terms_s, "adapter_gemm").value > 0);
  CHECK(term(full.predicted.training_terms_s, "adapter_gemm").value == 0);
  // FSDP (one micro step): the base weights and the adapters all-gathered in bf16, forward
  // and backward; a reduce-scatter of the adapters' fp32 gradients only.
  CHECK(term(lora.predicted.comm_bytes, "fsdp_all_gather").value ==
        Approx(term(full.predicted.comm_bytes, "fsdp_all_gather").value +
               2 * 2 * 10092544.0 * 7 / 8));
  CHECK(term(lora.predicted.comm_bytes, "fsdp_reduce_scatter").value ==
        Approx(4 * 10092544.0 * 7 / 8));
}
