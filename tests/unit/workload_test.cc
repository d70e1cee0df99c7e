// The training-step model (docs/planner.md section 8): each term against a hand calculation
// from the model's dimensions, and the orderings the model exists to get right.
#include <catch2/catch.hpp>
#include <set>

#include "cost/roofline.h"
#include "cost/step_timeline.h"
#include "muonplan/base/error.h"
#include "muonplan/planner/model_io.h"
#include "muonplan/planner/plan.h"
#include "muonplan/planner/workload.h"
#include "test_plans.h"
#include "timeline_probe.h"

using namespace muonplan;
using test::h200;
using test::has;
using test::model;
using test::plan_fixed;
using test::term;

namespace {

Plan plan_with(const std::string& name, int nodes, OffloadMode mode, const Layout& layout,
               const Workload& w, OptimizerKind opt = OptimizerKind::muon) {
  PlanRequest r;
  r.options.nodes = nodes;
  r.options.offload = mode;
  r.options.layout = layout;
  r.options.workload = w;
  r.options.optimizer = opt;
  return make_plan(model(name), h200(), r);
}

// The published GLM-4.5-Air run's settings: 8 x 131072-token samples, full AC with AC offload,
// fused LM head of 1024-token chunks.
Workload glm_run() {
  Workload w;
  w.tokens_per_step = 8 * 131072;
  w.seq_len = 131072;
  w.ac_full = true;
  w.ac_offload = true;
  w.lm_head_chunk = 1024;
  return w;
}

}  // namespace

TEST_CASE("micro steps: sequences over data-parallel groups (world / cp)", "[workload]") {
  Workload w;
  w.tokens_per_step = 16 * 4096;
  w.seq_len = 4096;
  CHECK(micro_steps(w, 8, Layout{8, 2, 1}) == 4);  // 16 sequences, 4 groups
  CHECK(micro_steps(w, 8, Layout{8, 1, 1}) == 2);
  w.micro_batch_seqs = 2;
  CHECK(micro_steps(w, 8, Layout{8, 2, 1}) == 2);
  w.micro_batch_seqs = 3;
  CHECK_THROWS_WITH(micro_steps(w, 8, Layout{8, 2, 1}),
                    "--tokens-per-step: 16 sequences per step do not split over 4 data-parallel "
                    "groups (world 8 / cp 2) x 3 sequences per micro step; the nearest that do: "
                    "49152 or 98304 tokens");
  // Fewer rows than ranks: 0 micro steps planned no activations (issue 46 item 13).
  w.micro_batch_seqs = 1;
  w.tokens_per_step = 2 * 4096;
  CHECK_THROWS_WITH(micro_steps(w, 8, Layout{8, 1, 1}),
                    "--tokens-per-step: 2 sequences per step do not split over 8 data-parallel "
                    "groups (world 8 / cp 1) x 1 sequences per micro step; the nearest that do: "
                    "32768 tokens");
  w.tokens_per_step = 16 * 4096;
  w.seq_len = 4095;
  w.tokens_per_step = 16 * 4095;
  CHECK_THROWS_WITH(micro_steps(w, 8, Layout{8, 2, 1}),
                    "--layout: cp=2 does not divide the sequence length 4095");
}

TEST_CASE("fused LM head: logits of one chunk instead of the whole sequence", "[workload]") {
  const ModelSpec s = model("qwen3-30b-a3b");
  Workload w;
  w.tokens_per_step = 8 * 8192;
  w.seq_len = 8192;
  const Plan unfused = plan_with("qwen3-30b-a3b", 1, OffloadMode::none, Layout{8, 2, 8}, w);
  const double t = 8192 / 2;  // tokens per rank per micro step
  // The one rule the timeline allocates by (activation_sizes.h): unfused 16 B a logit at the
  // peak (the held fp32 logits, log_softmax and two fp32 gradients); fused 20 B an element of
  // one [chunk, 8192-entry vocabulary block] block.
  CHECK(term(unfused.predicted.gpu_workload_bytes, "logits").value ==
        Approx(t * double(s.vocab_size) * 16));
  CHECK_FALSE(has(unfused.predicted.gpu_workload_bytes, "lm_head_chunk_logits"));
  w.lm_head_chunk = 1024;
  // A 160 MiB block is not where this step peaks (backward is): the timeline holds it.
  const Plan fused = plan_with("qwen3-30b-a3b", 1, OffloadMode::none, Layout{8, 2, 8}, w);
  const StepTimeline tl = test::timeline_of(s, fused);
  CHECK(test::kind_bytes(tl, "lm_head_chunk_logits").most == 1024.0 * 8192 * 20);
  CHECK(test::kind_bytes(tl, "logits").most == 0);
  // A chunk longer than the rank's tokens is the whole sequence.
  w.lm_head_chunk = 1 << 20;
  const Plan big = plan_with("qwen3-30b-a3b", 1, OffloadMode::none, Layout{8, 2, 8}, w);
  CHECK(test::kind_bytes(test::timeline_of(s, big), "lm_head_chunk_logits").most == t * 8192 * 20);
}

TEST_CASE("expert- and context-parallel traffic follow the hand formulas", "[workload]") {
  const ModelSpec s = model("qwen3-30b-a3b");  // every layer MoE, GQA
  Workload w;
  w.tokens_per_step = 8 * 8192;
  w.seq_len = 8192;
  const Plan p = plan_with("qwen3-30b-a3b", 1, OffloadMode::none, Layout{8, 4, 8}, w);
  const double t = 8192 / 4, h = double(s.hidden_size), L = double(s.num_layers);
  const double micro = 8.0 / (8 / 4);                            // 8 sequences over 2 groups
  const double k = double(s.moe.experts_per_token), passes = 3;  // full AC: recompute too
  const double ep = micro * passes * L * 2 * t * k * h * 2 * 7.0 / 8;
  CHECK(term(p.predicted.comm_bytes, "ep_dispatch_combine").value == Approx(ep));
  const double heads = double(s.attention.num_heads), kv = double(s.attention.num_kv_heads),
               d = double(s.attention.head_dim);
  const double ulysses = micro * passes * L * t * (heads * d + kv * 2 * d + heads * d) * 2 * 3 / 4;
  CHECK(term(p.predicted.comm_bytes, "cp_attention").value == Approx(ulysses));
  // On NVLink at link_efficiency, not hidden (cp_comm_overlap and ep_comm_overlap 0).
  const Topology topo = h200();
  const double link = topo.node.nvlink_gbps * 1e9 * topo.calibration.link_efficiency;
  CHECK(term(p.predicted.training_terms_s, "exposed_ep_comm").value == Approx(ep / link));
  CHECK(term(p.predicted.training_terms_s, "exposed_cp_comm").value == Approx(ulysses / link));

  w.cp_style = CpStyle::ring;
  const Plan r = plan_with("qwen3-30b-a3b", 1, OffloadMode::none, Layout{8, 4, 8}, w);
  const double ring = micro * (passes + 1) * L * 3 * t * kv * 2 * d * 2;
  CHECK(term(r.predicted.comm_bytes, "cp_attention").value == Approx(ring));
  // Ring hops hide under attention compute: exposed only beyond it.
  CHECK(term(r.predicted.training_terms_s, "exposed_cp_comm").value <
        term(p.predicted.training_terms_s, "exposed_cp_comm").value);

  // ep = 1 and cp = 1 move nothing.
  const Plan flat = plan_with("qwen3-30b-a3b", 1, OffloadMode::none, Layout{8, 1, 1}, w);
  CHECK(term(flat.predicted.comm_bytes, "ep_dispatch_combine").value == 0);
  CHECK(term(flat.predicted.comm_bytes, "cp_attention").value == 0);
}

// Causal attention over 4096 tokens of Qwen3-0.6B: per row and layer forward 4096^2 x 16 heads
// x (128 + 128) = 68,719,476,736 FLOPs (QK^T and PV, half of the square), backward 2.5x that.
constexpr double kQwenAttnFwd = 4096.0 * 4096 * 16 * 256;

Workload qwen_rows(bool ac_full, AttentionKernel k = AttentionKernel::auto_kernel) {
  Workload w;
  w.tokens_per_step = 8 * 4096;  // one row per rank of 8
  w.seq_len = 4096;
  w.ac_full = ac_full;
  w.attention = k;
  return w;
}

// One node of 8 ranks, FSDP over them, no offload, planning qwen_rows' workload.
PlanRequest qwen_request(bool ac_full) {
  PlanRequest r;
  r.options.nodes = 1;
  r.options.offload = OffloadMode::none;
  r.options.layout = Layout{8, 1, 1};
  r.options.workload = qwen_rows(ac_full);
  return r;
}

TEST_CASE("roofline attention: causal FLOPs at the kernel's published rate", "[workload]") {
  // H200 (SM90): auto is FlashAttention-3, 616 TFLOP/s forward and 561 backward (FA3 paper),
  // each kernel at the topology's fitted fraction of its published rate.
  const Calibration& cal = h200().calibration;
  const Plan p = plan_with("qwen3-0.6b", 1, OffloadMode::none, Layout{8, 1, 1}, qwen_rows(false));
  const double e3 = cal.attention_fa3_efficiency, e2 = cal.attention_fa2_efficiency;
  const double fa3 = 28 * (kQwenAttnFwd / 616e12 + 2.5 * kQwenAttnFwd / 561e12) / e3;
  CHECK(term(p.predicted.training_terms_s, "attention").value == Approx(fa3).epsilon(1e-9));
  const Plan f2 = plan_with("qwen3-0.6b", 1, OffloadMode::none, Layout{8, 1, 1},
                            qwen_rows(false, AttentionKernel::fa2));
  const double fa2 = 28 * (kQwenAttnFwd / 335e12 + 2.5 * kQwenAttnFwd / 322e12) / e2;
  CHECK(term(f2.predicted.training_terms_s, "attention").value == Approx(fa2).epsilon(1e-9));
  // Full AC runs the forward again inside backward.
  const Plan ac = plan_with("qwen3-0.6b", 1, OffloadMode::none, Layout{8, 1, 1}, qwen_rows(true));
  CHECK(term(ac.predicted.training_terms_s, "attention").value ==
        Approx(fa3 + 28 * kQwenAttnFwd / 616e12 / e3).epsilon(1e-9));
}

TEST_CASE("roofline: FA3 only on SM90; auto is FA2 elsewhere", "[workload]") {
  CHECK(std::string(attention_rate(AttentionKernel::auto_kernel, 9.0).kernel) ==
        "FlashAttention-3");
  CHECK(std::string(attention_rate(AttentionKernel::auto_kernel, 8.6).kernel) ==
        "FlashAttention-2");
  CHECK(std::string(attention_rate(AttentionKernel::auto_kernel, 10.0).kernel) ==
        "FlashAttention-2");
  CHECK_THROWS_WITH(attention_rate(AttentionKernel::fa3, 8.0),
                    Catch::Contains("--attention: FlashAttention-3 runs on SM90 (Hopper) only"));
}

TEST_CASE("roofline GEMMs: frozen weights skip their weight grads; LoRA adds adapters",
          "[workload]") {
  const Plan full =
      plan_with("qwen3-0.6b", 1, OffloadMode::none, Layout{8, 1, 1}, qwen_rows(false));
  PlanRequest r = qwen_request(false);
  r.options.lora.rank = 16;
  const Plan lora = make_plan(model("qwen3-0.6b"), h200(), r);
  const double g = term(full.predicted.training_terms_s, "gemm").value;
  const double gl = term(lora.predicted.training_terms_s, "gemm").value;
  // Forward, input grad, weight grad of about equal cost: two of the three remain.
  CHECK(gl < 0.8 * g);
  CHECK(gl > 0.55 * g);
  CHECK(term(full.predicted.training_terms_s, "adapter_gemm").value == 0);
  CHECK(term(lora.predicted.training_terms_s, "adapter_gemm").value > 0);
}

TEST_CASE("roofline GEMMs: a bigger training_gemm_efficiency is faster in proportion",
          "[workload]") {
  PlanRequest r = qwen_request(false);
  Topology t = h200();
  t.calibration.layer_overhead_us = 0;
  t.calibration.training_gemm_efficiency = 0.4;
  const Plan slow = make_plan(model("qwen3-0.6b"), t, r);
  t.calibration.training_gemm_efficiency = 0.8;
  const Plan fast = make_plan(model("qwen3-0.6b"), t, r);
  // Compute-bound at 4096 tokens per rank: the GEMM term halves.
  CHECK(term(fast.predicted.training_terms_s, "gemm").value ==
        Approx(term(slow.predicted.training_terms_s, "gemm").value / 2).epsilon(0.02));
  t.calibration.layer_overhead_us = 1000;
  const Plan fixed = make_plan(model("qwen3-0.6b"), t, r);
  // 28 layers x (forward + backward) x 1 ms, one micro step.
  CHECK(term(fixed.predicted.training_terms_s, "layer_fixed").value -
            term(fast.predicted.training_terms_s, "layer_fixed").value ==
        Approx(28 * 2 * 1e-3));
}

TEST_CASE("the RL trainer's per-token host loop: by prime-rl's date, RL only", "[workload]") {
  PlanRequest r = qwen_request(true);
  const Topology t = h200();
  const Calibration& cal = t.calibration;
  auto loop = [&](const std::string& trainer, const std::string& date) {
    r.options.workload->trainer = trainer;
    r.options.workload->prime_rl_date = date;
    const Plan p = make_plan(model("qwen3-0.6b"), t, r);
    double v = 0;
    for (const Term& x : p.predicted.training_terms_s)
      v += x.name == "host_token_loop" ? x.value : 0;
    return v;
  };
  // January 2026: one micro step of 4096 tokens, each a Python iteration, two eager ops and a
  // sync: 4096 x (20 ns + 2 x 6.3 us + 6 us) = 76.3 ms at the bundled figures.
  const double per_token =
      cal.python_iteration_ns * 1e-9 + 2 * cal.eager_op_us * 1e-6 + cal.host_sync_us * 1e-6;
  CHECK(loop("rl", "2026-01-15") == Approx(4096 * per_token));
  CHECK(loop("rl", "2026-01-15") == Approx(0.0763).epsilon(0.01));
  CHECK(loop("rl", "2026-07-01") == 0);   // after #2723
  CHECK(loop("sft", "2026-01-15") == 0);  // SFT has no such loop
  CHECK(loop("", "") == 0);               // no trainer named
}

TEST_CASE("the LoRA wrapper: syncs, launches and full-width bytes per adapted linear",
          "[workload]") {
  PlanRequest r = qwen_request(true);
  r.options.optimizer = OptimizerKind::adamw;
  Topology t = h200();
  auto wrapper = [&](int rank, int slots) {
    r.options.lora.rank = rank;
    r.options.lora.adapters = slots;
    const Plan p = make_plan(model("qwen3-0.6b"), t, r);
    return term(p.predicted.training_terms_s, "lora_wrapper").value;
  };
  CHECK(wrapper(0, 1) == 0);
  const double sm90 = wrapper(16, 4);
  CHECK(sm90 > 0);
  // Qwen3-0.6B: 7 adapted linears x 28 layers; forward and recompute each 2 syncs that break
  // the compiled graph (each waits on the resumed graph's call, 39 us), 10 launches; backward 10
  // launches. The fixed part alone, one micro step:
  const Calibration& cal = t.calibration;
  const double fixed =
      7 * 28 *
      (2 * (2 * (cal.host_sync_us + 39) + 10 * cal.kernel_launch_us) + 10 * cal.kernel_launch_us) *
      1e-6;
  CHECK(sm90 > fixed);
  // Off SM90 (an A6000 is 8.6) the slots run in a loop, a sync and 2 launches more per slot
  // (forward and recompute; 2 launches in backward too).
  t.node.gpu.compute_capability = 8.6;
  const double loop = wrapper(16, 4);
  CHECK(loop - sm90 ==
        Approx(7 * 28 *
               (2 * (4 * (cal.host_sync_us + cal.eager_op_us) + 6 * cal.kernel_launch_us) +
                6 * cal.kernel_launch_us) *
               1e-6)
            .epsilon(1e-6));
}

TEST_CASE("roofline lora_wrapper: bytes, graph-breaking syncs and launches by hand", "[workload]") {
  PlanRequest r = qwen_request(true);
  r.options.optimizer = OptimizerKind::adamw;
  r.options.lora.rank = 16;
  r.options.lora.adapters = 4;
  Topology topo = h200();
  const Calibration& cal = topo.calibration;
  const double hbm = topo.node.gpu.hbm_gbps * 1e9 * cal.hbm_efficiency;
  auto wrapper = [&] {
    return term(make_plan(model("qwen3-0.6b"), topo, r).predicted.training_terms_s, "lora_wrapper")
        .value;
  };
  // Qwen3-0.6B's 7 adapted linears per layer (models/qwen3-0.6b.yaml): in q 1024, k 1024, v
  // 1024, o 2048, gate 1024, up 1024, down 3072 (sum 10240); out 2048, 1024, 1024, 1024, 3072,
  // 3072, 1024 (sum 12288). One micro step of t = 4096 tokens, 4 slots of rank 16, full AC.
  const double t = 4096, n = 4, rk = 16, in = 10240, out = 12288;
  // Forward (and again in the recompute): the slots' stacks (2 B read and written), the scale
  // and add (10 B per token and output), 2 syncs per linear that break the compiled graph
  // (host_sync_us + 39 us for the resumed graph's call), 10 launches per linear.
  const double fwd = (n * rk * 2 * 2 * (in + out) + 10 * t * out) / hbm +
                     7 * 2 * (cal.host_sync_us + 39) * 1e-6 + 7 * 10 * cal.kernel_launch_us * 1e-6;
  // Backward: the stacks' grads, the scale's (4 B per token and output), the input grad's add
  // (6 B per token and input), 10 launches per linear, no sync.
  const double bwd = (n * rk * 2 * 2 * (in + out) + 4 * t * out + 6 * t * in) / hbm +
                     7 * 10 * cal.kernel_launch_us * 1e-6;
  CHECK(wrapper() == Approx(28 * (2 * fwd + bwd)).epsilon(1e-9));
  // At the bundled H200 figures (4.8 TB/s x 0.9, 6 us a sync, 4 us a launch): 68.37 ms, of
  // which the graph breaks' host time is 28 x 2 x 7 x 2 x 45 us = 35.28 ms.
  CHECK(wrapper() == Approx(0.06837).epsilon(0.001));
  // The breaks' syncs wait on the compiled graph's call, not on an eager op: eager_op_us does
  // not enter on SM90; each us of host_sync_us adds 784 us (28 x 2 passes x 7 x 2).
  const double before = wrapper();
  topo.calibration.eager_op_us += 10;
  CHECK(wrapper() == Approx(before).epsilon(1e-12));
  topo.calibration.host_sync_us += 1;
  CHECK(wrapper() - before == Approx(784e-6).epsilon(1e-9));
}

TEST_CASE("training step is the sum of its terms; hidden work is listed apart", "[workload]") {
  const Plan p = plan_with("glm-4.5-air", 1, OffloadMode::full, Layout{8, 4, 8}, glm_run());
  double total = 0;
  for (const Term& t : p.predicted.training_terms_s) total += t.value;
  CHECK(*p.predicted.training_step_s == Approx(total));
  CHECK(term(p.predicted.training_hidden_s, "backward_host_work").value > 0);
  CHECK(term(p.predicted.training_hidden_s, "backward_grads_d2h").value > 0);
  // A training step under full offload keeps gradients in flight, not the whole gradient.
  CHECK_FALSE(has(p.predicted.gpu_persistent_bytes, "grads_bf16"));
  CHECK(term(p.predicted.gpu_workload_bytes, "grads_bf16_in_flight").value <
        0.1 * term(p.predicted.gpu_persistent_bytes, "params_bf16").value);
}

TEST_CASE("full offload: Muon pays its post-backward phase, signSGD hides its work in backward",
          "[workload]") {
  const Plan muon = plan_with("glm-4.5-air", 1, OffloadMode::full, Layout{8, 4, 8}, glm_run());
  const Plan sign = plan_with("glm-4.5-air", 1, OffloadMode::full, Layout{8, 4, 8}, glm_run(),
                              OptimizerKind::signsgd);
  const Prediction& m = muon.predicted;
  const Prediction& g = sign.predicted;
  const double post = term(m.training_terms_s, "post_backward_optimizer").value;
  CHECK(term(g.training_terms_s, "post_backward_optimizer").value == 0);
  CHECK(term(m.training_terms_s, "gemm").value == Approx(term(g.training_terms_s, "gemm").value));
  // Muon is slower, by about its post-backward phase less signSGD's weight upload.
  const double diff = *m.training_step_s - *g.training_step_s;
  const double upload = term(g.training_terms_s, "weight_upload").value;
  CHECK(diff > 0);
  CHECK(diff == Approx(post - upload).margin(0.25 * post));
  // signSGD's host work is not on the critical path: what the optimizer adds to its step is a
  // small part of the standalone optimizer step, which puts all of that work after backward.
  const double added = term(g.training_terms_s, "exposed_backward_offload").value + upload;
  CHECK(added < 0.25 * g.optimizer_step_s);
  CHECK(term(g.training_hidden_s, "backward_host_work").value > g.optimizer_step_s / 2);
}

TEST_CASE("the GLM-4.5-Air run: 1 node fits with full offload, optimizer offload needs 2",
          "[workload]") {
  const Plan full1 = plan_with("glm-4.5-air", 1, OffloadMode::full, Layout{8, 4, 8}, glm_run());
  CHECK(full1.fits);
  const Plan opt1 = plan_with("glm-4.5-air", 1, OffloadMode::optimizer, Layout{8, 4, 8}, glm_run());
  CHECK_FALSE(opt1.fits);
  const Plan opt2 =
      plan_with("glm-4.5-air", 2, OffloadMode::optimizer, Layout{16, 4, 8}, glm_run());
  CHECK(opt2.fits);
  // The node search agrees.
  PlanRequest r;
  r.auto_nodes = true;
  r.options.offload = OffloadMode::optimizer;
  r.options.layout = Layout{0, 4, 8};
  r.options.workload = glm_run();
  const Plan searched = make_plan(model("glm-4.5-air"), h200(), r);
  CHECK(searched.fits);
  CHECK(searched.options.nodes == 2);
}

TEST_CASE("layout search: ep over expert-count divisors, cp over powers of two", "[workload]") {
  PlanRequest r;
  r.options.nodes = 1;
  r.options.offload = OffloadMode::none;
  r.search_ep = r.search_cp = true;
  Workload w;
  w.tokens_per_step = 8 * 8192;
  w.seq_len = 8192;
  r.options.workload = w;
  const Plan p = make_plan(model("qwen3-30b-a3b"), h200(), r);
  std::set<std::string> layouts;
  const Candidate* best = nullptr;
  for (const Candidate& c : p.candidates) {
    layouts.insert(c.layout);
    if (c.evaluated && c.fits && (!best || c.gpu_seconds < best->gpu_seconds)) best = &c;
  }
  // 128 experts: ep 1, 2, 4, 8 on 8 ranks; cp 1, 2, 4, 8.
  CHECK(layouts.size() == 16);
  CHECK(layouts.count("fsdp=8,cp=8,ep=8") == 1);
  REQUIRE(best);
  CHECK(to_string(p.options.layout) == best->layout);
  // A partial layout fixes what it names.
  r.options.layout = Layout{0, 2, 1};
  r.search_cp = false;
  const Plan fixed_cp = make_plan(model("qwen3-30b-a3b"), h200(), r);
  CHECK(fixed_cp.options.layout.cp == 2);
  for (const Candidate& c : fixed_cp.candidates)
    CHECK(c.layout.find(",cp=2,") != std::string::npos);
}

TEST_CASE("full offload: weight upload and backward offload against hand figures", "[workload]") {
  Topology topo = h200();
  const ModelSpec spec = model("glm-4.5-air");
  PlanRequest r;
  r.options.nodes = 1;
  r.options.offload = OffloadMode::full;
  r.options.layout = Layout{8, 4, 8};
  r.options.workload = glm_run();
  r.options.optimizer = OptimizerKind::signsgd;
  const Plan p = make_plan(spec, topo, r);
  // signSGD: every local param is updated on the host during backward, then uploaded as bf16.
  double local = 0;
  for (const Term& t : p.predicted.gpu_persistent_bytes) {
    if (t.name == "params_bf16") local = t.value / 2;
  }
  const double h2d = topo.node.pcie_h2d_gbps * 1e9 * topo.calibration.pcie_efficiency;
  CHECK(term(p.predicted.training_terms_s, "weight_upload").value == Approx(2 * local / h2d));
  // The host work is bytes over the node's host bandwidth shared by its ranks: 4 micro steps,
  // accumulate (6 B, then 10 B twice), then the signSGD update reading the accumulator (16 B).
  const double cpu = topo.node.host_mem_gbps * 1e9 * topo.calibration.host_kernel_efficiency / 8;
  CHECK(term(p.predicted.training_hidden_s, "backward_host_work").value ==
        Approx(local * (6 + 10 + 10 + 16) / cpu).epsilon(1e-6));
  const double exposed = term(p.predicted.training_terms_s, "exposed_backward_offload").value;
  CHECK(exposed >= 0);
  CHECK(exposed < term(p.predicted.training_hidden_s, "backward_host_work").value);
  // A host 1000x slower: the host work no longer fits under backward, and what sticks out is at
  // least the host work less the whole backward time.
  topo.node.host_mem_gbps /= 1000;
  const Plan slow = make_plan(spec, topo, r);
  const double host = term(slow.predicted.training_hidden_s, "backward_host_work").value;
  double fb = 0;  // the whole compute: the roofline's terms
  for (const char* n :
       {"gemm", "expert_gemm", "adapter_gemm", "attention", "elementwise", "moe_routing", "lm_head",
        "lm_head_loss", "layer_fixed", "lora_wrapper", "expert_loop", "fsdp_copies"})
    fb += term(slow.predicted.training_terms_s, n).value;
  const double slow_exposed =
      term(slow.predicted.training_terms_s, "exposed_backward_offload").value;
  CHECK(slow_exposed >= host - fb);
  CHECK(slow_exposed <= host + term(slow.predicted.training_hidden_s, "backward_grads_d2h").value);
}

TEST_CASE("a workload adds activations and a training-step time", "[workload]") {
  PlanOptions o;
  o.workload = Workload{4 * 1024 * 1024, 4096, 1, true, false};
  const Plan p = plan_fixed("qwen3-30b-a3b", 2, OffloadMode::none, o);
  REQUIRE(p.predicted.training_step_s.has_value());
  CHECK(*p.predicted.training_step_s > p.predicted.optimizer_step_s);
  // The timeline's peak (the muonplan runtime's: no allocator) falls in the LM head, where the
  // full-AC checkpoints are all live: the embeddings' output and the 48 layers' outputs (the
  // last one the final norm's input), 49 x 2 t h with t = 4096 tokens, h = 2048.
  CHECK(p.predicted.gpu_workload_bytes.at(0).formula.find("LM head") != std::string::npos);
  CHECK(term(p.predicted.gpu_workload_bytes, "checkpointed_layer_inputs").value ==
        49.0 * 2 * 4096 * 2048);
  o.workload->ac_offload = true;
  const Plan off = plan_fixed("qwen3-30b-a3b", 2, OffloadMode::none, o);
  CHECK(term(off.predicted.host_bytes_per_node, "ac_offload").value == 8 * 48.0 * 2 * 4096 * 2048);
  CHECK(off.predicted.gpu_peak_bytes() < p.predicted.gpu_peak_bytes());
  // One table: the host buffers are the timeline's layer inputs, the tensors it frees as it
  // offloads them (the embeddings' output and layers 0-46's outputs, 48 of 2 t h each) and
  // brings back in backward, once per layer.
  TimelineInputs in;
  in.step_transient = off.predicted.gpu_transient_bytes;
  const StepTimeline tl =
      build_step_timeline(model("qwen3-30b-a3b"), off.inventory, off.options, off.chunks, in, 1);
  double inputs = 0;
  int reloaded = 0;
  for (const TimelineEvent& e : tl.events) {
    const TimelineTensor& t = tl.tensors[size_t(e.tensor)];
    if (!e.alloc || t.kind != "checkpointed_layer_inputs") continue;
    const std::string name = t.name();
    if (name == "embeddings.output" ||
        (name.find(".output") != std::string::npos && name.rfind("layers.47.", 0) != 0))
      inputs += double(t.bytes);
    reloaded += name.find("(reloaded)") != std::string::npos ? 1 : 0;
  }
  const int micro = 2;  // 4M tokens / (16 ranks x 4096) = 64 micro steps: two recorded
  CHECK(8 * inputs / micro == term(off.predicted.host_bytes_per_node, "ac_offload").value);
  // Those that left the GPU come back: at most 5 in flight (TimelineInputs' default), so layer
  // k's input goes once layer k + 4 is done, layers 0-43's, 44 per micro step.
  CHECK(reloaded == micro * 44);
}

namespace {

// An H200 whose GEMMs and HBM passes are 1e5 to 1e6 times faster: what remains is host time.
Topology host_bound(double compute_capability) {
  Topology t = h200();
  t.node.gpu.bf16_tflops *= 1e6;
  t.node.gpu.hbm_gbps *= 1e5;
  t.node.gpu.compute_capability = compute_capability;
  return t;
}

PlanRequest lora_rows(int rank, int64_t seq_len) {
  PlanRequest r = test::one_node_rows(seq_len);
  r.options.lora.rank = rank;
  return r;
}

}  // namespace

TEST_CASE("roofline expert_loop: LoRA experts off SM90 pay 122 eager ops per busy expert",
          "[workload]") {
  const ModelSpec glm = model("glm-4.5-air");
  const PlanRequest r = lora_rows(16, 16384);
  // 45 MoE layers x 128 experts (16384 x 8 / 128 tokens each) x (36 forward + 36 recompute +
  // 50 backward) ops x 25 us, one micro step; the GEMMs under it cost next to nothing here.
  const double loop_s = 45 * 128 * (36 + 36 + 50) * 25e-6;
  const Plan b200 = make_plan(glm, host_bound(10.0), r);
  CHECK(term(b200.predicted.training_terms_s, "expert_loop").value == Approx(loop_s).epsilon(1e-3));
  const Plan hopper = make_plan(glm, host_bound(9.0), r);
  CHECK(term(hopper.predicted.training_terms_s, "expert_loop").value == 0);
  // A rank that is not a multiple of 8 keeps grouped_mm off on Hopper too.
  const Plan odd = make_plan(glm, host_bound(9.0), lora_rows(12, 16384));
  CHECK(term(odd.predicted.training_terms_s, "expert_loop").value == Approx(loop_s).epsilon(1e-3));
  // No LoRA: the base experts run grouped GEMMs on every GPU.
  const Plan full = make_plan(glm, host_bound(10.0), lora_rows(0, 16384));
  CHECK(term(full.predicted.training_terms_s, "expert_loop").value == 0);
}

TEST_CASE("roofline lm_head_loss: the fused head's recompute and fp32 passes", "[workload]") {
  Topology topo = h200();
  topo.node.gpu.bf16_tflops *= 1e6;  // GEMMs bound by their bytes: a hand-workable figure
  const double hbm = topo.node.gpu.hbm_gbps * 1e9 * topo.calibration.hbm_efficiency;
  const double t = 16384, h = 1024, vocab = 151936;  // Qwen3-0.6B, one row per GPU
  PlanRequest r = lora_rows(0, 16384);
  r.options.workload->lm_head_chunk = 2048;
  const Plan fused = make_plan(model("qwen3-0.6b"), topo, r);
  // 8 token chunks x vocab / 8192 tiles of [2048, 1024] x [1024, 8192], recomputed in backward:
  // bf16 bytes of both inputs and the output; then 48 + 46 B per token and vocab entry.
  const double tiles = vocab / 8192, chunks = t / 2048;
  const double recompute = 2 * (t * h * tiles + h * vocab * chunks + t * vocab);
  CHECK(term(fused.predicted.training_terms_s, "lm_head_loss").value ==
        Approx((recompute + 94 * t * vocab) / hbm).epsilon(1e-9));
  r.options.workload->lm_head_chunk = 0;  // unfused: 22 B per entry, no recompute
  const Plan whole = make_plan(model("qwen3-0.6b"), topo, r);
  CHECK(term(whole.predicted.training_terms_s, "lm_head_loss").value ==
        Approx(22 * t * vocab / hbm).epsilon(1e-9));
}

TEST_CASE("roofline fsdp_copies: FSDP2's copy-out per gather and copy-in per reduce-scatter",
          "[workload]") {
  const Topology topo = h200();
  const double hbm = topo.node.gpu.hbm_gbps * 1e9 * topo.calibration.hbm_efficiency;
  // Qwen3-30B-A3B by hand (models/qwen3-30b-a3b.yaml): a layer's q [4096, 2048], k and v
  // [512, 2048], o [2048, 4096], q/k norms 128 each, two norms 2048 each, the router [128,
  // 2048], 128 experts of gate and up [768, 2048] and down [2048, 768]; the root's embeddings
  // and head [151936, 2048] and the final norm.
  const double layer = 4096.0 * 2048 + 2 * 512.0 * 2048 + 2048.0 * 4096 + 2 * 128 + 2 * 2048 +
                       128.0 * 2048 + 128 * 3 * 768.0 * 2048;
  const double root = 2 * 151936.0 * 2048 + 2048;
  // One micro step (one row per GPU), full AC: a layer's copy-out in forward and again in
  // backward (the recompute reads backward's gather), the root's once; each trained element's
  // bf16 gradient read and written as fp32 (reduce_dtype) by the reduce-scatter's copy-in.
  const PlanRequest r = lora_rows(0, 16384);
  const Plan full = make_plan(model("qwen3-30b-a3b"), topo, r);
  const double copy_out = 48 * 2 * 4 * layer + 4 * root, copy_in = (2 + 4) * (48 * layer + root);
  CHECK(term(full.predicted.training_terms_s, "fsdp_copies").value ==
        Approx((copy_out + copy_in) / hbm).epsilon(1e-9));
  // A bf16 reduce-scatter writes 2 B per element.
  PlanRequest bf16 = r;
  bf16.options.workload->reduce_bytes = 2;
  const Plan half = make_plan(model("qwen3-30b-a3b"), topo, bf16);
  CHECK(term(half.predicted.training_terms_s, "fsdp_copies").value ==
        Approx((copy_out + (2 + 2) * (48 * layer + root)) / hbm).epsilon(1e-9));
  // LoRA gathers the frozen base weights as well (and its adapters), but reduce-scatters only
  // the adapters' gradients: more than the copy-out alone, less than full fine-tuning.
  const Plan lora = make_plan(model("qwen3-30b-a3b"), topo, lora_rows(16, 16384));
  const double lora_s = term(lora.predicted.training_terms_s, "fsdp_copies").value;
  CHECK(lora_s > copy_out / hbm);
  CHECK(lora_s < (copy_out + copy_in) / hbm);
}
