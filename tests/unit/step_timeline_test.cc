// The training step's allocation timeline (planner/src/cost/step_timeline.h) and its replay
// through the caching-allocator model: FSDP2's order and streams, no tensor left behind, and
// the peaks' location on a hand-worked sequence.
#include <catch2/catch.hpp>

#include <map>

#include "cost/activation_sizes.h"
#include "cost/step_timeline.h"
#include "test_plans.h"

using namespace muonplan;
using namespace muonplan::test;

namespace {

// Index of the first event for `name` (alloc or free), or -1.
int event_of(const StepTimeline& tl, const std::string& name, bool alloc) {
  for (size_t i = 0; i < tl.events.size(); ++i) {
    const TimelineEvent& e = tl.events[i];
    if (e.alloc == alloc && tl.tensors[size_t(e.tensor)].name() == name) return int(i);
  }
  return -1;
}

// The most bytes per element live at once in a head's order (a held tensor stays live): the
// figure docs/planner.md states for each head.
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

}  // namespace

TEST_CASE("timeline replay: peaks, where they fall and what is live", "[timeline]") {
  StepTimeline tl;
  tl.phase("one");
  const int a = tl.alloc({.head = "a"}, "first", 12 * MiB);
  tl.free(a);
  tl.phase("two");
  tl.alloc({.head = "b"}, "second", 16 * MiB);
  tl.alloc({.head = "c"}, "second", 1000, kAllGatherStream);
  const TimelineReplay r = replay_timeline(tl, {});
  // a: its own 12 MiB segment, freed and cached; b: 16 MiB does not fit it, a new segment;
  // c: 1000 B -> 1024 B, the all-gather stream's small pool, a 2 MiB segment.
  CHECK(r.allocated.bytes == 16 * MiB + 1024);
  CHECK(r.allocated.where == "two");
  REQUIRE(r.allocated.live.size() == 1);
  CHECK(r.allocated.live[0].name == "second");
  CHECK(r.allocated.live[0].value == 16 * MiB + 1024);
  CHECK(r.allocated.live_tensors == 2);
  CHECK(r.reserved.bytes == (12 + 16 + 2) * MiB);
  CHECK(r.reserved_by_stream[0] == std::pair<int, int64_t>{kDefaultStream, 28 * MiB});
  CHECK(r.reserved_by_stream[1] == std::pair<int, int64_t>{kAllGatherStream, 2 * MiB});
}

TEST_CASE("timeline: FSDP2's order and streams, and nothing left behind", "[timeline]") {
  const PlanOptions o = tiny_workload();
  const Plan plan = plan_fixed("tiny-dense", 1, OffloadMode::none, o);
  TimelineInputs in;
  in.step_transient = plan.predicted.gpu_transient_bytes;
  const StepTimeline tl =
      build_step_timeline(model("tiny-dense"), plan.inventory, plan.options, plan.chunks, in);
  // Forward: layer 1's all-gather is issued before layer 0's output is freed (two held).
  const int ag1 = event_of(tl, "layers.1.all_gather_output", true);
  const int free0 = event_of(tl, "layers.0.all_gather_output", false);
  REQUIRE(ag1 >= 0);
  CHECK(ag1 < free0);
  for (const TimelineTensor& t : tl.tensors) {
    if (t.name().find("all_gather_output") != std::string::npos)
      CHECK(t.stream == kAllGatherStream);
    if (t.name().find("grad_shard") != std::string::npos) CHECK(t.stream == kReduceScatterStream);
    if (t.name().find("reduce_scatter_input") != std::string::npos)
      CHECK(t.stream == kDefaultStream);
  }
  // Backward: a unit's reduce-scatter input is dropped before the next unit allocates its own.
  const int rs1 = event_of(tl, "layers.1.reduce_scatter_input", true);
  const int rs1_free = event_of(tl, "layers.1.reduce_scatter_input", false);
  const int rs0 = event_of(tl, "layers.0.reduce_scatter_input", true);
  CHECK((rs1 < rs1_free && rs1_free < rs0));
  // After two steps only the parameters, the optimizer state and the last micro step's fp32
  // logits (2048 tokens x 1000 vocabulary x 4 B, held by the SFT loop's `out` until the next
  // forward) are live: the persistent terms less the gradients (zero_grad frees them).
  std::vector<char> live(tl.tensors.size(), 0);
  for (const TimelineEvent& e : tl.events) live[size_t(e.tensor)] = e.alloc;
  double bytes = 0;
  for (size_t t = 0; t < live.size(); ++t) bytes += live[t] ? double(tl.tensors[t].bytes) : 0;
  const Prediction& p = plan.predicted;
  CHECK(bytes == term(p.gpu_persistent_bytes, "params_fp32").value +
                     term(p.gpu_persistent_bytes, "adamw_moments").value + 2048.0 * 1000 * 4);
}

TEST_CASE("timeline: the SFT loop holds the fp32 logits until the next forward rebinds them",
          "[timeline]") {
  const PlanOptions o = tiny_workload();  // unfused head, two micro steps
  const Plan plan = plan_fixed("tiny-dense", 1, OffloadMode::none, o);
  TimelineInputs in;
  const StepTimeline tl =
      build_step_timeline(model("tiny-dense"), plan.inventory, plan.options, plan.chunks, in, 1);
  std::vector<int> allocs, frees;
  for (size_t i = 0; i < tl.events.size(); ++i) {
    const TimelineEvent& e = tl.events[i];
    if (tl.tensors[size_t(e.tensor)].name() != "lm_head.logits_fp32") continue;
    (e.alloc ? allocs : frees).push_back(int(i));
  }
  // Two micro steps make two; the first is freed right after the second exists, not at its own
  // micro step's log_softmax, and the second outlives the optimizer step.
  REQUIRE(allocs.size() == 2);
  REQUIRE(frees.size() == 1);
  CHECK(frees[0] == allocs[1] + 1);
  CHECK(tl.phases[size_t(tl.events[size_t(frees[0])].where)].find("micro step 2: LM head") !=
        std::string::npos);
}

TEST_CASE("timeline: the unfused LM head's logits set the peak of a large-vocabulary step",
          "[timeline]") {
  PlanOptions o = tiny_workload();
  const Plan plan = plan_fixed("qwen3-0.6b", 1, OffloadMode::none, o);
  const Prediction& p = plan.predicted;
  // 2048 tokens x 151936 vocabulary x 16 B (the held fp32 logits, log_softmax and the two
  // fp32 gradients) = 4.6 GiB of logits, far above any layer; each tensor its own segment, so
  // no rounding to speak of.
  CHECK(p.gpu_allocated_peak_at.find("LM head") != std::string::npos);
  CHECK(term(p.gpu_live_at_peak_bytes, "logits").value ==
        Approx(2048.0 * 151936 * 16).epsilon(1e-3));
  CHECK(sum(p.gpu_live_at_peak_bytes) == Approx(p.gpu_allocated_bytes()).epsilon(1e-12));
}

TEST_CASE("timeline: the LM head's bytes per element at its peak, worked by hand", "[timeline]") {
  // Fused block: bf16 logits 2 + fp32 scaled 4 + probs 4 + grad 4 + grad x 1/T 4 + bf16 cast 2.
  CHECK(lm_head_peak_bytes_per_elem(fused_lm_head_block_tensors()) == 20);
  // Unfused: the bf16 logits 2 (freed once cast); the fp32 copy 4 the loop's `out` holds;
  // log_softmax 4 + its gradient 4 + the logits' gradient 4.
  CHECK(lm_head_peak_bytes_per_elem(unfused_lm_head_tensors()) == 16);
}

TEST_CASE("timeline: the fused LM head in [token chunk, 8192-vocab] blocks", "[timeline]") {
  PlanOptions o = tiny_workload();
  o.workload->lm_head_chunk = 1024;  // 2048 tokens: two full token chunks
  const Plan plan = plan_fixed("qwen3-0.6b", 1, OffloadMode::none, o);
  TimelineInputs in;
  const StepTimeline tl =
      build_step_timeline(model("qwen3-0.6b"), plan.inventory, plan.options, plan.chunks, in, 1);
  // 151936 = 18 x 8192 + 4480: a full block and the last one per token chunk, in each of the
  // step's two micro steps (4096 tokens per step, 2048 per micro step).
  double full = 0, last = 0;
  int blocks = 0;
  for (const TimelineTensor& t : tl.tensors) {
    if (t.name().rfind("lm_head[chunk 0].", 0) == 0) full += double(t.bytes), ++blocks;
    if (t.name().rfind("lm_head[chunk 0][last vocab block].", 0) == 0) last += double(t.bytes);
  }
  CHECK(blocks == 2 * 6);
  CHECK(full == 2 * 1024.0 * 8192 * 20);
  CHECK(last == 2 * 1024.0 * 4480 * 20);
  // The chunks reuse the blocks the one before freed: no logits of a whole [tokens, vocab].
  for (const TimelineTensor& t : tl.tensors) {
    if (t.kind == "lm_head_chunk_logits") CHECK(t.bytes <= 1024 * 8192 * 4);
  }
}

TEST_CASE("timeline: LoRA's frozen base weights are gathered but get no gradient or state",
          "[timeline][lora]") {
  PlanOptions o = tiny_workload();
  o.lora.rank = 16;
  o.lora.adapters = 2;
  const Plan plan = plan_fixed("qwen3-0.6b", 1, OffloadMode::none, o);
  TimelineInputs in;
  const StepTimeline tl =
      build_step_timeline(model("qwen3-0.6b"), plan.inventory, plan.options, plan.chunks, in, 1);
  double frozen = 0;
  int moments = 0, frozen_grads = 0;
  for (const TimelineTensor& t : tl.tensors) {
    if (t.kind == "frozen_params") frozen += double(t.bytes);
    if (t.kind == "adamw_moments") ++moments;
    const bool base =
        t.name().find("lora_") == std::string::npos && t.name().rfind("model.", 0) == 0;
    if (base && t.name().find(".grad") != std::string::npos) ++frozen_grads;
  }
  // fp32 shards of the base weights (offload none: prime-rl keeps its optimization dtype),
  // on one rank the whole model: 4 B x 596,049,920 (Qwen3-0.6B, tied embeddings).
  CHECK(frozen == 4.0 * 596049920);
  CHECK(frozen == term(plan.predicted.gpu_persistent_bytes, "frozen_params").value);
  // Two AdamW moments per adapter tensor (A and B, both slots); none for the base weights.
  CHECK(moments == 2 * int(plan.inventory.tensors.size()));
  CHECK(frozen_grads == 0);
  // Gathered all the same: layer 0's q_proj unsharded in bf16, 2048 x 1024 x 2 B.
  bool gathered = false;
  for (const TimelineTensor& t : tl.tensors) {
    if (t.name() == "model.layers.0.self_attn.q_proj.weight.unsharded")
      gathered = t.bytes == 2048 * 1024 * 2;
  }
  CHECK(gathered);
}

TEST_CASE("timeline: Ulysses CP and EP all-to-all buffers, worked by hand", "[timeline]") {
  // Qwen3-30B-A3B: hidden 2048, 32 query and 4 kv heads of 128, top-8 routing; 4096 tokens.
  const ModelSpec s = model("qwen3-30b-a3b");
  const double t = 4096;
  auto bytes = [&](bool ulysses, int cp, int ep) {
    std::vector<std::pair<std::string, double>> v;
    for (const CommBuffer& b : layer_a2a_buffers(s, 0, t, ulysses, cp, ep))
      v.push_back({b.name, b.bytes});
    return v;
  };
  using V = std::vector<std::pair<std::string, double>>;
  // q, k, v: 2 B x 4096 x (32 x 128 + 4 x 128 + 4 x 128) = 40 MiB; the output 32 MiB.
  CHECK(bytes(true, 2, 1) == V{{"ulysses_qkv_recv", 40.0 * MiB}, {"ulysses_out_recv", 32.0 * MiB}});
  // Top-8 copies of a bf16 hidden state: 2 B x 4096 x 8 x 2048 = 128 MiB each.
  CHECK(bytes(false, 2, 4) == V{{"ep_dispatch_recv", 128.0 * MiB},
                                {"ep_expert_out", 128.0 * MiB},
                                {"ep_combine_recv", 128.0 * MiB}});
  CHECK(bytes(true, 1, 1).empty());   // no exchange without CP or EP
  CHECK(bytes(false, 4, 1).empty());  // ring CP passes k/v blocks, not these
}

TEST_CASE("timeline: LoRA moments and the optimizer step for the active runs only",
          "[timeline][lora]") {
  auto count = [](int active) {
    PlanOptions o = tiny_workload();
    o.lora.rank = 16;
    o.lora.adapters = 4;
    o.lora.active_runs = active;
    const Plan plan = plan_fixed("qwen3-0.6b", 1, OffloadMode::none, o);
    const StepTimeline tl = build_step_timeline(model("qwen3-0.6b"), plan.inventory, plan.options,
                                                plan.chunks, TimelineInputs{}, 2);
    struct Counts {
      int moments = 0, temporaries = 0, step_phases = 0, grads_alloc = 0, grads_free = 0;
      double moment_term = 0;
      size_t adapters = 0;
    } c;
    for (const TimelineTensor& t : tl.tensors) {
      c.moments += t.kind == "adamw_moments";
      c.temporaries += t.kind == "adamw_foreach_temporaries";
    }
    for (const std::string& p : tl.phases) c.step_phases += p.find("optimizer step") != p.npos;
    for (const TimelineEvent& e : tl.events) {
      if (tl.tensors[size_t(e.tensor)].kind != "grads_fp32") continue;
      (e.alloc ? c.grads_alloc : c.grads_free) += 1;
    }
    // The moments live at the allocated peak (none: no term).
    for (const Term& t : plan.predicted.gpu_persistent_bytes)
      c.moment_term += t.name == "adamw_moments" ? t.value : 0;
    c.adapters = plan.inventory.tensors.size();  // A and B of every target, 4 slots
    return c;
  };
  const auto all = count(-1), one = count(1), none = count(0);
  // Every slot: two moments per adapter tensor (made at the first step), and one foreach
  // temporary per adapter tensor and step (two steps recorded).
  CHECK(all.moments == 2 * int(all.adapters));
  CHECK(all.temporaries == 2 * int(all.adapters));
  // One active run of four: a quarter of them, and a quarter of the moments' bytes.
  CHECK(one.moments == all.moments / 4);
  CHECK(one.temporaries == all.temporaries / 4);
  CHECK(one.moment_term == Approx(all.moment_term / 4));
  CHECK(one.step_phases == 2);  // both recorded steps run it
  // None: no optimizer step at all (no phase, so no peak can fall in one), no state, and the
  // first step's gradients are never freed (zero_grad runs for ready runs only). Two steps of
  // two micro steps each: with every slot, 4 gradient shards per parameter made (micro step 1
  // keeps its shard to zero_grad, micro step 2 accumulates and frees its own), all freed;
  // with none, the second step's first micro step accumulates too: 3 of the 4 freed.
  CHECK(none.moments == 0);
  CHECK(none.temporaries == 0);
  CHECK(none.step_phases == 0);
  CHECK(none.moment_term == 0);
  CHECK(all.grads_free == all.grads_alloc);
  CHECK(none.grads_alloc == all.grads_alloc);
  CHECK(4 * none.grads_free == 3 * none.grads_alloc);
}

TEST_CASE("timeline: the MoE block's hidden-width tensors, saved and temporary", "[timeline]") {
  // Qwen3-30B-A3B: hidden 2048, 128 experts, top-8, expert width 768; 4096 tokens.
  const ModelSpec s = model("qwen3-30b-a3b");
  const double t = 4096, tkh = t * 8 * 2048;
  std::map<std::string, ActivationTensor> row;
  for (const ActivationTensor& a : layer_activation_tensors(s, 0, t, 1)) row[a.name] = a;
  // Saved: the permuted copy, padded by 128 experts x 8 rows (2 B x (32768 + 1024) x 2048),
  // and routed_output.to(float32) (4 B x 32768 x 2048 = 256 MiB).
  CHECK(row.at("routed_tokens").bytes == 2.0 * (t * 8 + 128 * 8) * 2048);
  CHECK(row.at("routed_tokens").saved());
  CHECK(row.at("routed_output_fp32").bytes == 4 * tkh);
  CHECK(row.at("routed_output_fp32").saved());
  // Temporaries: the gather (held to the end of _run_routed_experts), the vstack copy, the
  // grouped GEMMs' padded output, the un-permute buffer, the fp32 product and its bf16 cast.
  CHECK(row.at("routed_input").bytes == 2 * tkh);
  CHECK(std::string(row.at("routed_input").freed_after) == "routed_output_bf16");
  CHECK(std::string(row.at("expert_out").freed_after) == "unpermute_buffer");
  CHECK(std::string(row.at("unpermute_buffer").freed_after) == "routed_output_fp32");
  CHECK(row.at("routed_scaled_fp32").bytes == 4 * tkh);
  CHECK_FALSE(row.at("routed_output_bf16").saved());
  // layer_activation_bytes counts the saved rows only; the temporaries are the six above.
  double saved = 0, all = 0;
  for (const auto& [name, a] : row) {
    saved += a.saved() ? a.bytes : 0;
    all += a.bytes;
  }
  CHECK(layer_activation_bytes(s, 0, t, 1) == saved);
  CHECK(all - saved == 2 * tkh + 2 * (tkh + 2048) + 2.0 * (t * 8 + 1024) * 2048 + 2 * (tkh + 2048) +
                           4 * tkh + 2 * tkh);
}

TEST_CASE("timeline: prime-rl's fused AdamW from #3305 has no foreach temporary", "[timeline]") {
  // One foreach sqrt(exp_avg_sq) per AdamW tensor and recorded step (two), unless prime-rl of
  // 2026-08-19 or later builds AdamW fused (the optimizer not offloaded).
  auto temporaries = [](const std::string& trainer, const std::string& date, OffloadMode mode) {
    PlanOptions o = tiny_workload();
    o.workload->trainer = trainer;
    o.workload->prime_rl_date = date;
    if (mode == OffloadMode::optimizer) o.optimizer_staging = OffloadStaging::whole;
    const Plan plan = plan_fixed("qwen3-0.6b", 1, mode, o);
    const StepTimeline tl = build_step_timeline(model("qwen3-0.6b"), plan.inventory, plan.options,
                                                plan.chunks, TimelineInputs{}, 2);
    int n = 0;
    for (const TimelineTensor& t : tl.tensors) n += t.kind == "adamw_foreach_temporaries";
    return n;
  };
  const int foreach_n = temporaries("", "", OffloadMode::none);
  CHECK(foreach_n > 0);
  CHECK(temporaries("rl", "2026-08-18", OffloadMode::none) == foreach_n);
  CHECK(temporaries("rl", "2026-08-19", OffloadMode::none) == 0);
  CHECK(temporaries("sft", "", OffloadMode::none) == 0);  // today's prime-rl
  // Offloaded (optim_cpu_offload: staged whole), prime-rl keeps the foreach AdamW.
  CHECK(temporaries("rl", "2026-08-21", OffloadMode::optimizer) == foreach_n);
}
