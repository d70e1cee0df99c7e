// The memory model (docs/planner.md): each GPU and host term against a hand calculation from
// the model's parameter counts and shapes, and how the terms follow the offload mode.
#include <catch2/catch.hpp>

#include "muonplan/base/units.h"
#include "muonplan/planner/plan.h"
#include "test_plans.h"

using namespace muonplan;
using namespace muonplan::test;  // model, topology and plan helpers (test_plans.h)

TEST_CASE("memory terms: qwen3-8b on one node of 8 H200s against hand figures", "[cost_model]") {
  const Plan none = plan_fixed("qwen3-8b", 1, OffloadMode::none);
  const Prediction& p = none.predicted;
  const InventorySummary s = build_inventory(model("qwen3-8b")).summarize();
  // FSDP over 8 ranks: each holds an eighth of every tensor (rows split unevenly, so the
  // busiest rank is within 1% of it).
  const double params = double(s.params_total) / 8, muon = double(s.params_muon) / 8,
               adamw = double(s.params_adamw) / 8;
  const double params_fp32 = 4 * params, grads_fp32 = 4 * params;
  const double momentum = 4 * muon, moments = 8 * adamw;  // fp32 Muon momentum; AdamW m and v
  CHECK(term(p.gpu_persistent_bytes, "params_fp32").value == Approx(params_fp32).epsilon(0.01));
  CHECK(term(p.gpu_persistent_bytes, "grads_fp32").value == Approx(grads_fp32).epsilon(0.01));
  CHECK(term(p.gpu_persistent_bytes, "muon_momentum").value == Approx(momentum).epsilon(0.01));
  CHECK(term(p.gpu_persistent_bytes, "adamw_moments").value == Approx(moments).epsilon(0.01));
  CHECK(p.gpu_persistent_bytes.size() == 4);
  // Transient: the heaviest window of three batches in flight. Batches of eight matrices follow
  // the layers, so it is a batch of 12288 x 4096 MLP matrices (gate or up), one of 4096 x 12288
  // (down) and one of 4096 x 4096 (q or o) of the next layer. Each rank holds one matrix's worth
  // of each batch's shards: bf16 send and receive buffers of both exchanges (2 x 2 B) and the
  // gathered bf16 matrix (2 B) per element. On top, the largest NS scratch among them, an MLP
  // matrix's: 2 x 2 m n + 2 x 2 m^2 bytes, m = 4096, n = 12288, and two floats (norm, scale),
  // each region rounded up to 256 bytes. And the non-finite check's fp32 sums: one per chunk,
  // and one per tensor for the AdamW weights: 36 layers of 11 tensors (q, k, v, o, q_norm,
  // k_norm, gate, up, down and two layer norms), the embedding, the final norm and the LM head.
  const double mlp = 12288.0 * 4096, attn = 4096.0 * 4096;
  const double scratch = 2 * (2 * mlp) + 2 * (2 * 4096.0 * 4096) + 2 * 256;
  const double transient = 6 * (mlp + mlp + attn) + scratch;
  CHECK(term(p.gpu_transient_bytes, "step_buffers").value == transient);
  REQUIRE(p.gpu_transient_bytes.size() == 2);
  const double check = 4.0 * double(none.chunks.chunks.size() + 36 * 11 + 3);
  CHECK(term(p.gpu_transient_bytes, "nonfinite_check").value == check);
  // Fixed: the topology's 0.5 GiB CUDA context and 2% allocator slack on what is allocated.
  const double allocated = params_fp32 + grads_fp32 + momentum + moments + transient + check;
  CHECK(term(p.gpu_fixed_bytes, "cuda_context").value == 0.5 * kGiB);
  CHECK(term(p.gpu_fixed_bytes, "allocator_slack").value == Approx(0.02 * allocated).epsilon(0.01));
  CHECK(p.gpu_peak_bytes() == Approx(1.02 * allocated + 0.5 * kGiB).epsilon(0.01));
}

TEST_CASE("memory terms follow the offload mode", "[cost_model]") {
  PlanOptions o;
  const Prediction p = plan_fixed("qwen3-8b", 1, OffloadMode::none, o).predicted;
  o.bf16_momentum = true;
  const Plan bf16 = plan_fixed("qwen3-8b", 1, OffloadMode::none, o);
  CHECK(term(bf16.predicted.gpu_persistent_bytes, "muon_momentum").value ==
        Approx(term(p.gpu_persistent_bytes, "muon_momentum").value / 2));
  // Optimizer offload: state moves to host and back once per step.
  const Plan opt = plan_fixed("qwen3-8b", 1, OffloadMode::optimizer);
  CHECK(opt.predicted.h2d_bytes_per_gpu == Approx(opt.predicted.d2h_bytes_per_gpu));
  CHECK(opt.predicted.h2d_bytes_per_gpu * 8 ==
        Approx(term(opt.predicted.host_bytes_per_node, "optimizer_state").value));
}

TEST_CASE("full offload keeps 12 B per Muon param on the host, 16 for AdamW, 8 for signSGD",
          "[cost_model]") {
  // Qwen3-8B by hand: 36 layers of hidden 4096, 32 query and 8 KV heads of 128, MLP 12288,
  // vocabulary 151936, untied head. AdamW: embedding and head 2 x 151936 x 4096 = 1,244,659,712,
  // norms 36 x (2 x 4096 + 2 x 128) + 4096 = 308,224: 1,244,967,936. Muon: the rest of
  // 8,190,735,360, i.e. 6,945,767,424. One node holds every shard once.
  auto host_state = [](const Prediction& p) {
    return term(p.host_bytes_per_node, "fp32_master").value +
           term(p.host_bytes_per_node, "fp32_grad_accumulator").value +
           term(p.host_bytes_per_node, "optimizer_state").value;
  };
  for (auto [opt, bytes] : {std::pair{OptimizerKind::adamw, 131'051'765'760.0},  // 16 B x all
                            {OptimizerKind::signsgd, 65'525'882'880.0}}) {       // 8 B x all
    PlanOptions o;
    o.optimizer = opt;
    CHECK(host_state(plan_fixed("qwen3-8b", 1, OffloadMode::full, o).predicted) == bytes);
  }
  // Muon: master, accumulator and momentum, 12 B per Muon param; 16 B per AdamW param.
  const Prediction muon = plan_fixed("qwen3-8b", 1, OffloadMode::full).predicted;
  CHECK(host_state(muon) == 12.0 * 6'945'767'424 + 16.0 * 1'244'967'936);  // 103,268,696,064
  CHECK(term(muon.host_bytes_per_node, "optimizer_state").value == 37'742'813'184.0);
}
