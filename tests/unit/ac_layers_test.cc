// Activation checkpointing as prime-rl's apply_ac runs it (planner/src/cost/ac_layers.h): which
// layers get AC (freq), what a selective layer keeps and recomputes per target, in the step
// timeline (whence the memory terms) and the recompute time, against hand counts on tiny-dense
// and tiny-moe.
#include <catch2/catch.hpp>

#include "cost/ac_layers.h"
#include "cost/step_timeline.h"
#include "muonplan/base/error.h"
#include "muonplan/planner/plan_request.h"
#include "muonplan/planner/workload.h"
#include "plan/workload_flags.h"
#include "test_paths.h"
#include "test_plans.h"
#include "timeline_probe.h"

using namespace muonplan;
using namespace muonplan::test;

namespace {

// tiny-dense (h 250, 5 heads of 50, 1 kv head, ffn 667, 5 layers), one rank, 2048 tokens.
// Per layer (activation_sizes.cc), bytes: the layer input, q, the attention output and the
// two norm inputs 2 t h = 1,024,000 each (5 of them: 5,120,000); k and v 2 t 50 = 204,800
// each; the fp32 softmax statistics 4 t 5 = 40,960; gate, up and act 2 t 667 = 2,732,032 each.
constexpr double kMlpBytes = 3 * 2732032.0;
constexpr double kLayerBytes = 5 * 1024000.0 + 2 * 204800 + 40960 + kMlpBytes;  // 13,766,656
constexpr double kInputBytes = 1024000;

PlanOptions tiny(const std::string& ac, const std::vector<std::string>& targets, int64_t freq) {
  PlanOptions o;
  o.optimizer = OptimizerKind::adamw;
  o.gpus_per_node = 1;
  o.layout = {1, 1, 1};
  o.runtime = RuntimeKind::pytorch;
  o.workload = Workload{4096, 2048, 1, ac == "full", false, 0, CpStyle::ulysses};
  o.workload->ac_selective = ac == "selective";
  o.workload->ac_targets = targets;
  o.workload->ac_freq = freq;
  return o;
}

Plan tiny_plan(const std::string& model_name, const PlanOptions& o) {
  return plan_fixed(model_name, 1, OffloadMode::none, o);
}

// The step timeline of a plan (the terms of every runtime are its tensors at its peak).
StepTimeline timeline_of(const std::string& model_name, const PlanOptions& o) {
  return test::timeline_of(model(model_name), tiny_plan(model_name, o));
}

// Bytes of `kind` live when the first micro step's forward ends (before the LM head's first
// event): what the layers keep for backward.
double after_forward(const StepTimeline& tl, const std::string& kind) {
  return kind_bytes(tl, kind, "LM head").last;
}

// The most bytes of `kind` live at once over the whole timeline.
double most_live(const StepTimeline& tl, const std::string& kind) {
  return kind_bytes(tl, kind).most;
}

int allocs_of(const StepTimeline& tl, const std::string& name) {
  int n = 0;
  for (const TimelineEvent& e : tl.events)
    n += e.alloc && tl.tensors[size_t(e.tensor)].name() == name ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("ac layers: freq picks layers 0 N 2N; selective tensors by target", "[ac]") {
  Workload w;
  w.ac_freq = 2;
  CHECK(layer_ac(w, 0) == LayerAc::full);
  CHECK(layer_ac(w, 1) == LayerAc::none);
  CHECK(layer_ac(w, 4) == LayerAc::full);
  w.ac_full = false;
  w.ac_selective = true;
  CHECK(layer_ac(w, 2) == LayerAc::selective);
  CHECK(ac_targets(w) == std::vector<std::string>{"norm"});  // prime-rl's default
  const ActivationTensor gate{"mlp_gate", 1, true, nullptr, "mlp"}, q{"q", 1, false};
  CHECK_FALSE(recomputed(w, 0, gate));  // norm only
  w.ac_targets = {"mlp"};
  CHECK(recomputed(w, 0, gate));
  CHECK_FALSE(recomputed(w, 1, gate));  // layer 1 has no AC at freq 2
  CHECK_FALSE(recomputed(w, 0, q));     // saved by attention under every target
}

TEST_CASE("ac memory: what each target keeps and recomputes, hand counts at freq 1 and 2", "[ac]") {
  // The timeline's tensors (whence every runtime's memory terms): at the end of forward a
  // layer's input is its checkpoint (`checkpointed_layer_inputs`: the embeddings' output and
  // each layer's output, the last one the LM head's input: 6 x 2 t h), the rest of what it
  // keeps is `activations`, and what is made again in backward `recomputed_layer_activations`
  // (its gradients are `activation_grads`).
  // Selective mlp, every layer: each keeps all but its input, gate, up and act; one layer's
  // three at a time (forward, recompute).
  StepTimeline tl = timeline_of("tiny-dense", tiny("selective", {"mlp"}, 1));
  CHECK(after_forward(tl, "activations") == 5 * (kLayerBytes - kMlpBytes - kInputBytes));
  CHECK(after_forward(tl, "checkpointed_layer_inputs") == 6 * kInputBytes);
  CHECK(after_forward(tl, "recomputed_layer_activations") == 0);
  CHECK(most_live(tl, "recomputed_layer_activations") == kMlpBytes);
  // Selective norm (the default): the table lists no tensor inside a norm, so nothing is
  // recomputed and every layer keeps everything, as without AC.
  tl = timeline_of("tiny-dense", tiny("selective", {}, 1));
  CHECK(after_forward(tl, "activations") == 5 * (kLayerBytes - kInputBytes));
  CHECK(most_live(tl, "recomputed_layer_activations") == 0);
  // attn_proj: the projections' outputs are saved by attention, the input by the checkpoint.
  tl = timeline_of("tiny-dense", tiny("selective", {"attn_proj"}, 1));
  CHECK(after_forward(tl, "activations") == 5 * (kLayerBytes - kInputBytes));
  // Full AC every 2nd layer: layers 0, 2, 4 keep their input only, 1 and 3 everything; a
  // full-AC layer's tensors (all but its input), one layer at a time.
  tl = timeline_of("tiny-dense", tiny("full", {}, 2));
  CHECK(after_forward(tl, "activations") == 2 * (kLayerBytes - kInputBytes));
  CHECK(after_forward(tl, "checkpointed_layer_inputs") == 6 * kInputBytes);
  CHECK(most_live(tl, "recomputed_layer_activations") == kLayerBytes - kInputBytes);
  // Selective mlp every 2nd layer.
  tl = timeline_of("tiny-dense", tiny("selective", {"mlp"}, 2));
  CHECK(after_forward(tl, "activations") ==
        3 * (kLayerBytes - kMlpBytes - kInputBytes) + 2 * (kLayerBytes - kInputBytes));
  CHECK(most_live(tl, "recomputed_layer_activations") == kMlpBytes);
}

TEST_CASE("ac memory: tiny-moe routed experts recomputed and the shared expert kept", "[ac]") {
  // tiny-moe layers 1-4 (MoE, ep 1), t = 2048, top-2 (tk 4096), 10 experts (padded rows
  // tk + 10 x 8 = 4176), expert ffn 125: the saved tensors of _run_routed_experts are
  // routed_tokens 2 x 4176 x 250, expert gate, up and act 2 x 4096 x 125 each and the fp32
  // routed output 4 x 4096 x 250 (the rest are temporaries of its forward).
  const double routed = 2 * 4176 * 250.0 + 3 * 2 * 4096 * 125.0 + 4 * 4096 * 250.0;
  const StepTimeline none = timeline_of("tiny-moe", tiny("none", {}, 1));
  const StepTimeline sel = timeline_of("tiny-moe", tiny("selective", {"routed_experts"}, 1));
  CHECK(after_forward(none, "activations") - after_forward(sel, "activations") == 4 * routed);
  CHECK(after_forward(sel, "recomputed_layer_activations") == 0);
  // Made again in backward: once in forward and once in the recompute, per micro step.
  const int micro = allocs_of(none, "layers.1.routed_output_fp32");
  REQUIRE(micro > 0);
  CHECK(allocs_of(sel, "layers.1.routed_output_fp32") == 2 * micro);
  // mlp and routed_experts together: layer 0 (dense) drops its MLP as well.
  const StepTimeline both =
      timeline_of("tiny-moe", tiny("selective", {"mlp", "routed_experts"}, 1));
  CHECK(after_forward(none, "activations") - after_forward(both, "activations") ==
        4 * routed + kMlpBytes);
}

TEST_CASE("ac targets: prime-rl's ValueError for a target no checkpointed layer has", "[ac]") {
  CHECK_THROWS_WITH(tiny_plan("tiny-dense", tiny("selective", {"routed_experts"}, 1)),
                    Catch::Contains("--ac-targets: selective AC target routed_experts is not "
                                    "supported by the checkpointed layers of tiny-dense"));
  CHECK_THROWS_WITH(tiny_plan("tiny-moe", tiny("selective", {"mla_up_proj"}, 1)),
                    Catch::Contains("supported: attn_proj, mlp, norm, routed_experts"));
  CHECK_THROWS_WITH(tiny_plan("tiny-moe", tiny("selective", {"linear_attn"}, 1)),
                    Catch::Contains("target linear_attn is not supported"));
  CHECK_THROWS_WITH(tiny_plan("tiny-dense", tiny("selective", {"attention_sdpa"}, 1)),
                    Catch::Contains("unknown selective AC target 'attention_sdpa'"));
  // tiny-moe's only dense layer is 0; at freq 2 it is checkpointed, so mlp is supported.
  CHECK_NOTHROW(tiny_plan("tiny-moe", tiny("selective", {"mlp"}, 2)));
}

TEST_CASE(
    "ac timeline: a selective layer frees its targets in forward and makes them again in backward",
    "[ac]") {
  const PlanOptions o = tiny("selective", {"mlp"}, 2);
  const Plan plan = tiny_plan("tiny-dense", o);
  TimelineInputs in;
  in.step_transient = plan.predicted.gpu_transient_bytes;
  const StepTimeline tl =
      build_step_timeline(model("tiny-dense"), plan.inventory, plan.options, plan.chunks, in);
  // Layer 0 (selective): the gate twice per micro step (forward, recompute); layer 1 (no AC)
  // once; q is kept on both.
  const int micro = allocs_of(tl, "layers.1.mlp_gate");
  REQUIRE(micro > 0);
  CHECK(allocs_of(tl, "layers.0.mlp_gate") == 2 * micro);
  CHECK(allocs_of(tl, "layers.0.q") == micro);
  for (const TimelineTensor& t : tl.tensors) {
    if (t.name() == "layers.0.mlp_gate") {
      CHECK(std::string(t.kind) == "recomputed_layer_activations");
    }
    if (t.name() == "layers.0.q") CHECK(std::string(t.kind) == "activations");
  }
}

TEST_CASE("ac recompute time: the targets' forward again", "[ac]") {
  auto terms = [](const std::string& ac, const std::vector<std::string>& targets) {
    return tiny_plan("tiny-dense", tiny(ac, targets, 1)).predicted.training_terms_s;
  };
  const auto none = terms("none", {}), full = terms("full", {});
  const auto proj_mlp = terms("selective", {"attn_proj", "mlp"});
  const auto all = terms("selective", {"norm", "attn_proj", "mlp"});
  // tiny-dense's GEMMs are all attention projections or MLP: recomputing both targets is full
  // AC's GEMM recompute; attention itself is never recomputed by a selective target.
  CHECK(term(proj_mlp, "gemm").value - term(none, "gemm").value ==
        Approx(term(full, "gemm").value - term(none, "gemm").value).epsilon(1e-9));
  CHECK(term(proj_mlp, "attention").value == Approx(term(none, "attention").value));
  CHECK(term(full, "attention").value > term(none, "attention").value);
  // Elementwise per token forward 10 h + 2 (heads + kv) qk + 3 ffn = 2500 + 600 + 2001 bf16
  // elements; the targets recompute the norms (4 h), the rotary and the SwiGLU, not the
  // residual adds: 3601 of 5101.
  CHECK(term(all, "elementwise").value - term(none, "elementwise").value ==
        Approx((term(full, "elementwise").value - term(none, "elementwise").value) * 3601 / 5101)
            .epsilon(1e-9));
}

namespace {

std::string ac_of(const Workload& w) {
  std::string s = w.ac_selective ? "selective" : w.ac_full ? "full" : "none";
  for (const std::string& t : w.ac_targets) s += " " + t;
  return s + " freq " + std::to_string(w.ac_freq);
}

}  // namespace

TEST_CASE("ac from a workload file and from the flags: one rule, the flags given override",
          "[ac]") {
  const TempFile sel("ac_selective_workload.yaml",
                     "tokens_per_step: 131072\nseq_len: 16384\nac: selective\n"
                     "ac_targets: [norm, mlp, norm]\nac_freq: 2\n");
  CHECK(ac_of(load_workload(sel.path)) == "selective norm mlp freq 2");

  PlanFlags f;
  set_plan_flag(f, "workload", sel.path);
  CHECK(ac_of(*detail::workload_from_flags(f)) == "selective norm mlp freq 2");
  set_plan_flag(f, "ac", "full");  // the file's targets go; its freq stays
  CHECK(ac_of(*detail::workload_from_flags(f)) == "full freq 2");
  set_plan_flag(f, "ac", "none");  // and with none, the freq too
  CHECK(ac_of(*detail::workload_from_flags(f)) == "none freq 1");
  PlanFlags g;
  set_plan_flag(g, "workload", sel.path);
  set_plan_flag(g, "ac-targets", "attn_proj");
  CHECK(ac_of(*detail::workload_from_flags(g)) == "selective attn_proj freq 2");

  PlanFlags h;  // the flag path, by the same rule
  for (auto [k, v] : {std::pair{"tokens-per-step", "131072"},
                      {"seq-len", "16384"},
                      {"ac", "selective"},
                      {"ac-targets", "norm, mlp"},
                      {"ac-freq", "2"}})
    set_plan_flag(h, k, v);
  CHECK(ac_of(*detail::workload_from_flags(h)) == "selective norm mlp freq 2");
  set_plan_flag(h, "ac", "full");
  CHECK(error_of([&] { detail::workload_from_flags(h); }) ==
        "--ac-targets: applies to --ac selective only");

  const TempFile none_freq("ac_none_freq.yaml",
                           "tokens_per_step: 131072\nseq_len: 16384\nac: none\nac_freq: 2\n");
  CHECK(error_of([&] { load_workload(none_freq.path); }) ==
        none_freq.path + ":4:10: ac_freq: applies to ac full or selective only");
  const TempFile full_targets("ac_full_targets.yaml",
                              "tokens_per_step: 131072\nseq_len: 16384\nac_targets: [norm]\n");
  CHECK(error_of([&] {
          load_workload(full_targets.path);
        }).find("ac_targets: applies to ac selective only") != std::string::npos);
  const TempFile none_offload(
      "ac_none_offload.yaml",
      "tokens_per_step: 131072\nseq_len: 16384\nac: none\nac_offload: true\n");
  CHECK(error_of([&] {
          load_workload(none_offload.path);
        }).find("ac: none contradicts ac_offload: true") != std::string::npos);
  PlanFlags o;
  set_plan_flag(o, "workload", full_targets.path);
  CHECK_THROWS_AS(detail::workload_from_flags(o), InputError);
}
