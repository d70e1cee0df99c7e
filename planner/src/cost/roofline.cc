// The training step's compute from each operation's roofline (roofline.h; docs/planner.md
// section 8, "Roofline"). Every operation costs max(FLOPs / rate, bytes / (hbm_gbps x
// hbm_efficiency)); GEMM rates follow their shapes through gemm_shape_efficiency (ns_model.h),
// attention its kernel's published throughput. Work is per FSDP unit and micro step (no loop
// over tokens), then summed over the micro steps.
#include "cost/roofline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <string>

#include "cost/ac_layers.h"
#include "cost/candidate_context.h"
#include "cost/grad_clip.h"
#include "cost/roofline_ops.h"
#include "cost/step_timeline_record.h"
#include "muonplan/base/error.h"
#include "muonplan/base/units.h"
#include "muonplan/planner/ns_model.h"
#include "muonplan/planner/workload.h"

namespace muonplan {

namespace {

using namespace roofline_ops;  // the operation classes and the constants their formulas quote

constexpr double kBf16 = 2;

struct Ctx {
  const CandidateContext& cand;  // top-k, the vocabulary block
  const Topology& topo;
  const RooflineShape& sh;
  double peak = 0, hbm = 0;
  AttentionRate attn;
  // Seconds by class and pass, one micro step: forward, backward, and the recompute of full
  // AC (each decoder layer's forward again, inside backward).
  double fwd[kClasses]{}, bwd[kClasses]{}, rec[kClasses]{};
  double flops[kClasses]{};
};

// One GEMM [m, k] x [k, n], batch of them; adds its FLOPs to `cls` and returns seconds.
double gemm_s(Ctx& c, OpClass cls, double batch, double m, double n, double k) {
  if (batch <= 0 || m <= 0 || n <= 0 || k <= 0) return 0;
  const double fl = 2 * batch * m * n * k;
  const double bytes = kBf16 * batch * (m * k + k * n + m * n);
  const GemmShapeEfficiency e = gemm_shape_efficiency(c.topo, batch, m, n, k);
  const double rate = c.peak * c.topo.calibration.training_gemm_efficiency * e.wave * e.k;
  c.flops[cls] += fl;
  return std::max(fl / rate, bytes / c.hbm);
}

struct Passes {
  double fwd = 0, bwd = 0;
  void add(double f, double b) { fwd += f, bwd += b; }
};

Passes add(Ctx& c, OpClass cls, double f, double b) {
  c.fwd[cls] += f;
  c.bwd[cls] += b;
  return {f, b};
}

// One device sync from the host: the copy and synchronize (host_sync_us), and the eager op the
// drained stream then waits on (eager_op_us): nothing queued hides either.
double sync_s(const Ctx& c) {
  return (c.topo.calibration.host_sync_us + c.topo.calibration.eager_op_us) * 1e-6;
}
// A sync at which torch.compile breaks the graph (roofline_ops.h, kCompiledGraphCallUs): the
// copy and synchronize, then the call of the compiled graph that resumes after it, which the
// drained stream waits on in place of one eager op.
double graph_break_sync_s(const Ctx& c) {
  return (c.topo.calibration.host_sync_us + kCompiledGraphCallUs) * 1e-6;
}
double launches_s(const Ctx& c, double n) {
  return n * c.topo.calibration.kernel_launch_us * 1e-6;
}

// A weight [out, in] over m tokens per copy, `batch` copies (`share` of them on this rank when
// under one): forward, input grad, and the weight grad unless the weight is frozen.
Passes weight_gemms(Ctx& c, OpClass cls, double batch, double m, double out, double in, bool frozen,
                    double share = 1) {
  const double f = gemm_s(c, cls, batch, m, out, in);
  const double b =
      gemm_s(c, cls, batch, m, in, out) + (frozen ? 0 : gemm_s(c, cls, batch, out, in, m));
  return add(c, cls, f * share, b * share);
}

// A LoRA adapter (lora.h: NAME.lora_A.k / NAME.lora_B.k) and its slot k. A sequence's tokens run
// through one slot (prime-rl's MultiLoRA layers pick one per micro step), so slot 0 stands for
// them all; the other slots hold memory and no work.
bool is_adapter(const std::string& name, bool* other_slot) {
  const size_t at = name.find(".lora_");
  if (at == std::string::npos) return false;
  *other_slot = name.compare(name.size() - 2, 2, ".0") != 0;
  return true;
}

// An elementwise pass: forward bytes, backward about twice them.
Passes bytes_s(Ctx& c, OpClass cls, double fwd_bytes) {
  return add(c, cls, fwd_bytes / c.hbm, 2 * fwd_bytes / c.hbm);
}

struct UnitWork {
  Passes p;
  double kernels_fwd = 0, collectives = 1;  // forward: one all-gather per FSDP group
  bool weight_grads = false;                // a trained base weight: backward's weight-grad pass
  double ffn_width = 0;                     // SwiGLU width per token (top-k routed + shared)
  bool moe = false;
  bool expert_adapters = false;                      // LoRA on the routed experts
  Passes experts;                                    // the routed experts' GEMMs, base and adapters
  double busy_experts = 1;                           // on the busiest rank (expert_load)
  double dense_ffn_width = 0, routed_ffn_width = 0;  // ffn_width's mlp and routed parts
  // The FSDP unit's elements as this rank gathers them (an expert stack's EP slice) and those
  // of them that get a gradient (fsdp_copy_passes).
  double gathered = 0, trained = 0;
  Passes copies;  // their copies (fsdp_copy_passes), apart from p: a recompute makes none
  // Forward seconds by class of each selective-AC target's functions (kAcTargetNames order)
  // and their GEMM launches: what a selective layer recomputes (ac_layers.h).
  double target_fwd[std::size(kAcTargetNames)][kClasses]{};
  double target_kernels[std::size(kAcTargetNames)]{};
};

// kAcTargetNames' indices.
enum AcTarget { norm_target, attn_proj_target, mlp_target, mla_up_target, routed_target };

// The selective-AC target whose checkpointed function runs a layer weight's GEMM (names as
// inventory.cc writes them; prime-rl's attn_projections and output_proj hold the attention's
// projections but MLA's up-projections, mla_up_proj those; mlp.forward a dense MLP;
// _run_routed_experts the routed experts): -1 for the router, shared experts and indexer.
int gemm_target(const ParamTensor& pt) {
  const std::string& n = pt.name;
  const auto has = [&](const char* part) { return n.find(part) != std::string::npos; };
  if (pt.is_expert()) return routed_target;
  if (has(".self_attn.")) {
    if (has("indexer")) return -1;
    return has("q_b_proj") || has("kv_b_proj") ? mla_up_target : attn_proj_target;
  }
  if (has(".mlp.") && !has("shared_experts") && !has(".mlp.gate.")) return mlp_target;
  return -1;
}

void credit(UnitWork& u, int target, int cls, double fwd_s, double kernels = 0) {
  if (target < 0) return;
  u.target_fwd[target][cls] += fwd_s;
  u.target_kernels[target] += kernels;
}

// torchtitan's MoE forward (prime-rl's moe.py, the expert_parallel wrapper; at ep 1 too), bytes
// per token, top_k = k: the router's bf16 logits upcast (2 + 4 per expert) and softmax (4 + 4),
// top-k (reads 4 E, writes k x (4 + 8)); the histogram (8 k) and the sort of the k choices
// (radix, 4 passes of 16 B: 64 k); the permutation gathers each token k times (2 h read and 2 h
// written per copy); the routed output times its score in fp32 (score_before_experts false:
// upcast 2 + 4, multiply 4 + 4, downcast 4 + 2 = 20 B per element of k h); the un-permute
// scatter-adds the k copies into the output (2 k h read, 4 k h read and written, 2 h zeroed).
double routing_bytes_per_token(const ModelSpec& s, double k, double h) {
  const double e = double(std::max<int64_t>(1, s.moe.num_experts));
  return kRouterBytesPerExpert * e + kRoutingBytesPerChoice * k + kRoutingBytesPerCopy * k * h +
         kRoutingZeroedBytes * h;
}
// The permutation pads each expert's rows to the grouped GEMM's alignment (16 rows for bf16 in
// torchtitan's generate_permute_indices): half an alignment per expert on average, written and
// read as zeros.
double padding_rows(const ModelSpec& s) {
  return double(std::max<int64_t>(1, s.moe.num_experts)) * 16 / 2;
}
// Kernels of one MoE forward: router upcast, softmax, top-k, histogram, sort, gather, pad,
// score upcast, multiply, downcast, zeros, scatter-add.
constexpr double kRoutingKernels = 12;

// Attention, elementwise and routing passes of one decoder layer, one micro step.
void layer_passes(Ctx& c, const ModelSpec& s, UnitWork& u) {
  const RooflineShape& sh = c.sh;
  const double t = sh.t, h = double(s.hidden_size);
  const double fl =
      sh.seqs_per_micro * sh.seq_len * sh.seq_len * sh.heads_q * (sh.qk + sh.v) / sh.cp;
  const double io = kBf16 * t * (2 * sh.heads_q * sh.qk + 2 * sh.heads_kv * (sh.qk + sh.v));
  const double af = std::max(fl / (c.peak * c.attn.forward), io / c.hbm);
  const double ab = std::max(kAttnBackwardFlops * fl / (c.peak * c.attn.backward), 2 * io / c.hbm);
  c.flops[attention] += (1 + kAttnBackwardFlops) * fl;
  const Passes a = add(c, attention, af, ab);
  u.p.add(a.fwd, a.bwd);
  // Elements per token forward: 2 norms (2h each), rotary on q and k, 2 residual adds (3h),
  // SwiGLU (read 2f, write f); backward reads and writes about twice that.
  const double ew = kBf16 * t * (10 * h + 2 * (sh.heads_q + sh.heads_kv) * sh.qk + 3 * u.ffn_width);
  const Passes e = bytes_s(c, elementwise, ew);
  u.p.add(e.fwd, e.bwd);
  // The targets' shares of it: the norms, the rotary (attn_projections), the SwiGLUs.
  credit(u, norm_target, elementwise, kBf16 * t * 4 * h / c.hbm);
  credit(u, attn_proj_target, elementwise,
         kBf16 * t * 2 * (sh.heads_q + sh.heads_kv) * sh.qk / c.hbm);
  credit(u, mlp_target, elementwise, kBf16 * t * 3 * u.dense_ffn_width / c.hbm);
  credit(u, routed_target, elementwise, kBf16 * t * 3 * u.routed_ffn_width / c.hbm);
  u.kernels_fwd += 1 + 6;
  if (u.moe) {
    const double k = c.cand.top_k;
    const Passes p = bytes_s(
        c, moe_routing, t * routing_bytes_per_token(s, k, h) + padding_rows(s) * 2 * kBf16 * h);
    u.p.add(p.fwd, p.bwd);
    u.kernels_fwd += kRoutingKernels;
    // _run_routed_experts' share: the gather and the fp32 score multiply (4 + 20 B per element
    // of k h) and the padding; the router and the un-permute's scatter-add are outside it.
    credit(u, routed_target, moe_routing,
           (t * 24 * k * h + padding_rows(s) * 2 * kBf16 * h) / c.hbm);
  }
}

// prime-rl's MultiLoRAGroupedExperts (trainer/models/layers/lora/multi_moe.py) runs its experts
// by torch._grouped_mm on compute capability 9.x only, and only when the rank, hidden and expert
// widths are multiples of 8; elsewhere it loops in Python over the experts that have tokens.
bool lora_expert_loop(const ModelSpec& s, const PlanOptions& o, double cc) {
  if (o.lora.rank <= 0 || cc <= 0) return false;
  const bool aligned =
      o.lora.rank % 8 == 0 && s.hidden_size % 8 == 0 && s.moe.intermediate_size % 8 == 0;
  return !(cc >= 9 && cc < 10 && aligned);
}
// Host cost of one eager aten op with autograd recording: an estimate in the 10-30 us that
// eager PyTorch's dispatch costs per op, NOT fitted; the held-out B200 LoRA run checks it.
constexpr double kEagerOpUs = 25;

// The loop's host time per pass; the experts' GEMMs run under it, so only the excess is added.
void expert_loop_passes(Ctx& c, const ModelSpec& s, const PlanOptions& o, UnitWork& u) {
  if (!u.expert_adapters || !lora_expert_loop(s, o, c.topo.node.gpu.compute_capability)) return;
  const double local = double(std::max<int64_t>(1, s.moe.num_experts)) / c.sh.ep;
  const double k = c.cand.top_k;
  const double busy = std::min({local, c.sh.t * k, u.busy_experts});  // experts with tokens
  const double f = std::max(0.0, busy * kLoopOpsFwd * kEagerOpUs * 1e-6 - u.experts.fwd);
  const double b = std::max(0.0, busy * kLoopOpsBwd * kEagerOpUs * 1e-6 - u.experts.bwd);
  const Passes p = add(c, expert_loop, f, b);
  u.p.add(p.fwd, p.bwd);
  credit(u, routed_target, expert_loop, p.fwd);
}

// Busy experts on the busiest rank of the EP group and their tokens each, one micro step: from
// the routing's distribution (--expert-load FILE: tokens per expert, any scale; the experts
// split over the EP ranks in order), else balanced (every local expert, t x top_k x ep / E
// tokens each).
struct ExpertLoad {
  double busy = 1, tokens_each = 0;
};
ExpertLoad expert_load(const ModelSpec& s, const Workload& w, const RooflineShape& sh, double k) {
  const int64_t experts = std::max<int64_t>(1, s.moe.num_experts);
  const double routed = sh.t * k * sh.ep;  // the EP group's token copies, per rank's share
  if (w.expert_load.empty()) {
    const double local = double(experts) / sh.ep;
    return {std::max(1.0, local), routed / double(experts)};
  }
  if (int64_t(w.expert_load.size()) != experts)
    throw InputError({}, "--expert-load",
                     std::to_string(w.expert_load.size()) + " numbers for a model of " +
                         std::to_string(experts) + " experts: give tokens per expert, one each");
  double sum = 0;
  for (double v : w.expert_load) sum += v;
  const int64_t per_rank = std::max<int64_t>(1, experts / sh.ep);
  ExpertLoad worst{1, 0};
  double worst_tokens = -1;
  for (int64_t r0 = 0; r0 < experts; r0 += per_rank) {
    double tokens = 0, busy = 0;
    for (int64_t e = r0; e < std::min(experts, r0 + per_rank); ++e) {
      const double te = routed * w.expert_load[size_t(e)] / sum;
      tokens += te;
      busy += te >= 0.5 ? 1 : 0;  // an expert with a token at least
    }
    if (tokens > worst_tokens)
      worst_tokens = tokens, worst = {std::max(1.0, busy), tokens / std::max(1.0, busy)};
  }
  return worst;
}

// prime-rl's MultiLoRALinear (trainer/models/layers/lora/multi_linear.py, January 2026) around
// each adapted linear, per call (forward, and the recompute's forward again under full AC): an
// assert on a tensor (a sync), torch.stack of the adapter slots' A and of their B, grouped GEMMs
// on compute capability 9.x with widths a multiple of 8 (elsewhere a loop over the slots that
// slices by tensor offsets: a sync per slot, two GEMM launches each), repeat_interleave with
// tensor repeats (a sync: its output's size is on the device), base_out + scaling x lora_out.
// The assert and repeat_interleave also break the compiled layer's graph (kCompiledGraphCallUs):
// after each, the stream waits for the host to call the resumed graph. Backward has no sync of
// the wrapper (autograd's engine thread runs ahead of the GPU): launches and bytes only.
// Called on the linear's A (its `in`: syncs, launches, the input grad's add) and on its B (its
// `out`: the scale and the full-width add).
void lora_wrapper_passes(Ctx& c, const PlanOptions& o, const ParamTensor& pt, UnitWork& u) {
  const int target = gemm_target(pt);
  const double t = c.sh.t, n = double(std::max<int64_t>(1, o.lora.adapters));
  const double r = double(o.lora.rank), cc = c.topo.node.gpu.compute_capability;
  double f = 0, b = 0;
  if (pt.name.find(".lora_B.") != std::string::npos) {
    const double out = double(pt.rows());
    f = (n * out * r * 2 * kBf16 + kWrapperFwdBytes * t * out) / c.hbm;  // the stack; scale, add
    b = (n * out * r * 2 * kBf16 + kWrapperBwdBytes * t * out) / c.hbm;  // its grads; scale's
  } else {
    const double in = double(pt.cols());
    const bool grouped = cc >= 9 && cc < 10 && o.lora.rank % 8 == 0 && int64_t(in) % 8 == 0;
    f = n * r * in * 2 * kBf16 / c.hbm + kWrapperGraphBreaks * graph_break_sync_s(c) +
        (grouped ? 0 : n) * sync_s(c) +
        launches_s(c, kWrapperLaunches + (grouped ? 0 : 2 * (n - 1)));
    b = (n * r * in * 2 * kBf16 + kWrapperInputGradBytes * t * in) / c.hbm +
        launches_s(c, kWrapperLaunches + (grouped ? 0 : 2 * (n - 1)));
  }
  const Passes p = add(c, lora_wrapper, f, b);
  u.p.add(p.fwd, p.bwd);
  credit(u, target, lora_wrapper, p.fwd);
}

// A parameter of the unit as FSDP2 gathers it on this rank (the timeline's unsharded elements,
// step_timeline_record.h) and, when it trains, gets a gradient reduce-scattered.
void count_fsdp_elements(UnitWork& u, const ParamTensor& pt, bool trained, int ep) {
  const double n = timeline::unsharded_elements(pt, ep);
  u.gathered += n;
  u.trained += trained ? n : 0;
}

// FSDP2's copies of one unit and micro step on the compute stream (roofline_ops.h,
// kCopyOutBytes): `gathers` copy-outs (a decoder layer is resharded after forward and gathered
// again for backward, prime-rl's reshard_after_forward; the root once), the first in forward;
// the reduce-scatter's copy-in in backward. Full AC's recompute runs on backward's gather.
void fsdp_copy_passes(Ctx& c, const PlanOptions& o, UnitWork& u, int gathers) {
  const double out = kCopyOutBytes * u.gathered / c.hbm;
  const double in = (kCopyInReadBytes + double(o.reduce_bytes())) * u.trained / c.hbm;
  u.copies = add(c, fsdp_copies, out, (gathers - 1) * out + in);
}

// Every matrix of one decoder layer (or MTP layer), one micro step.
UnitWork decoder_unit(Ctx& c, const ModelSpec& s, const ParamInventory& inv, const PlanOptions& o,
                      int64_t layer) {
  const RooflineShape& sh = c.sh;
  UnitWork u;
  const double k = c.cand.top_k;
  const double experts = double(std::max<int64_t>(1, s.moe.num_experts));
  const ExpertLoad load = s.moe.num_experts > 0 ? expert_load(s, *o.workload, sh, k) : ExpertLoad{};
  u.busy_experts = load.busy;
  inv.for_each_weight([&](const ParamTensor& pt, bool trained) {
    if (pt.layer != layer || (pt.mtp && !o.include_mtp)) return;
    count_fsdp_elements(u, pt, trained, sh.ep);
    if (pt.shape.size() < 2) return;
    const double out = double(pt.rows()), in = double(pt.cols());
    bool other_slot = false;
    const bool adapter = is_adapter(pt.name, &other_slot);
    if (other_slot) return;
    const bool frozen = !trained;
    u.weight_grads |= trained && !adapter;
    if (pt.is_expert()) {
      u.moe = true;
      const double local = double(pt.stack_count()) / sh.ep;  // this rank's experts of it
      // The busy ones of them and their tokens each (expert_load; balanced: all, evenly).
      const double busy = std::min(std::max(1.0, local), load.busy);
      const Passes p = weight_gemms(c, adapter ? adapter_gemm : expert_gemm, busy, load.tokens_each,
                                    out, in, frozen, std::min(1.0, local));
      u.p.add(p.fwd, p.bwd);
      u.experts.add(p.fwd, p.bwd);
      u.expert_adapters |= adapter;
      u.kernels_fwd += std::min(1.0, local);
      credit(u, routed_target, adapter ? adapter_gemm : expert_gemm, p.fwd, std::min(1.0, local));
      // gate and up (or fused gate_up) of the experts: half of out is the SwiGLU width, each
      // token in top_k of them.
      if (!adapter && pt.name.find("down") == std::string::npos) {
        u.ffn_width += out / 2 * k * double(pt.stack_count()) / experts;
        u.routed_ffn_width += out / 2 * k * double(pt.stack_count()) / experts;
      }
      return;
    }
    const Passes p = weight_gemms(c, adapter ? adapter_gemm : gemm, 1, sh.t, out, in, frozen);
    u.p.add(p.fwd, p.bwd);
    u.kernels_fwd += 1;
    credit(u, gemm_target(pt), adapter ? adapter_gemm : gemm, p.fwd, 1);
    if (adapter) lora_wrapper_passes(c, o, pt, u);
    if (!adapter && pt.name.find("mlp") != std::string::npos &&
        pt.name.find("down") == std::string::npos && out != experts) {
      u.ffn_width += out / 2;  // gate and up (or fused gate_up): half of it is the SwiGLU width
      if (gemm_target(pt) == mlp_target) u.dense_ffn_width += out / 2;
    }
  });
  if (u.moe) u.collectives = 2;  // the expert group's all-gather as well
  layer_passes(c, s, u);
  expert_loop_passes(c, s, o, u);
  fsdp_copy_passes(c, o, u, 2);
  return u;
}

// prime-rl's eras (docs/planner.md section 8), ISO dates compared as text. From #1525
// (2026-01-05) to #1987 (2026-03-09) the RL trainer's fused head chunked the vocabulary
// (chunk_size rows of the head's weight over all tokens of the micro step, a sync per chunk);
// from #1987 it chunks the tokens. #2723 rewrote get_response_lengths without its per-token
// loop: its date is not in the sources read here; between #2599 (2026-05-22) and #2868
// (2026-06-26) by its number, 2026-06-07 by linear interpolation (an estimate; the matrix's
// runs are weeks from it either side).
constexpr const char* kTokenChunkedHeadFrom = "2026-03-09";
constexpr const char* kHostLoopUntil = "2026-06-07";
bool vocab_chunked_head(const Workload& w) {
  return w.lm_head_chunk > 0 && !w.prime_rl_date.empty() && w.prime_rl_date < kTokenChunkedHeadFrom;
}

// The LM head (the root unit), one micro step: per chunk of tokens its GEMMs (lm_head) and the
// loss over the logits (lm_head_loss). The fused head's backward computes the weight grad even
// of a frozen head (its autograd Function does not ask), the unfused one under LoRA does not.
// A vocabulary-chunked head (vocab_chunked_head) runs lm_head_chunk rows of the weight over all
// t tokens per chunk, syncs once per chunk and pass, and accumulates the hidden states' fp32
// gradient over the chunks (read and written per chunk).
UnitWork head_unit(Ctx& c, const ModelSpec& s, const ParamInventory& inv, const PlanOptions& o) {
  const double t = c.sh.t, h = double(s.hidden_size), vocab = double(s.vocab_size);
  const Workload& w = *o.workload;
  const bool fused = w.lm_head_chunk > 0, by_vocab = vocab_chunked_head(w);
  UnitWork u;
  const bool weight_grad = fused || o.lora.rank == 0;
  double f = 0, b = 0, recompute = 0, extra_f = 0, extra_b = 0;
  if (by_vocab) {
    const double rows = std::min(double(w.lm_head_chunk), vocab), chunks = std::ceil(vocab / rows);
    f = gemm_s(c, lm_head, vocab / rows, t, rows, h);
    b = gemm_s(c, lm_head, vocab / rows, t, h, rows) +
        (weight_grad ? gemm_s(c, lm_head, vocab / rows, rows, h, t) : 0);
    recompute = gemm_s(c, lm_head_loss, vocab / rows, t, rows, h);
    extra_f = chunks * sync_s(c);
    extra_b = chunks * (sync_s(c) + 2 * 4 * t * h / c.hbm);
    u.kernels_fwd = 3 * chunks;
  } else {
    const double chunk = fused ? std::min(double(w.lm_head_chunk), t) : t;
    const double chunks = t / chunk;
    // The fused head's GEMM over vocab is its vocabulary block wide.
    const double vt = fused ? c.cand.vocab_block : vocab, tiles = vocab / vt;
    f = gemm_s(c, lm_head, tiles, chunk, vt, h) * chunks;
    b = (gemm_s(c, lm_head, tiles, chunk, h, vt) +
         (weight_grad ? gemm_s(c, lm_head, tiles, vt, h, chunk) : 0)) *
        chunks;
    recompute = fused ? gemm_s(c, lm_head_loss, tiles, chunk, vt, h) * chunks : 0;
    u.kernels_fwd = 3 * chunks;
  }
  add(c, lm_head, f, b);
  const double entries = t * vocab / c.hbm;
  const double lf = (fused ? kFusedFwdBytes : kUnfusedBytes / 2) * entries + extra_f;
  const double lb = recompute + (fused ? kFusedBwdBytes : kUnfusedBytes / 2) * entries + extra_b;
  add(c, lm_head_loss, lf, lb);
  u.p = {f + lf, b + lb};
  // The root unit (embeddings, final norm, the head): FSDP2 keeps the root unsharded from
  // forward to backward, one gather per micro step.
  inv.for_each_weight([&](const ParamTensor& pt, bool trained) {
    if (pt.layer == -1) count_fsdp_elements(u, pt, trained, c.sh.ep);
  });
  fsdp_copy_passes(c, o, u, 1);
  return u;
}

// The trainer's host work per step, outside the layers (prime-rl at the workload's date):
// syncs and small collectives of its loss and logging, per micro step and per step, and the RL
// trainer's per-token loop before #2723.
struct HostCounts {
  double syncs_micro = 0, syncs_step = 0, collectives_step = 0;
};
// Counted in rl/train.py and sft/train.py of January 2026 (d8f290ef0's era): RL per micro step
// 5 host-to-device copies of pageable tensors (6 under LoRA), 3 boolean-mask selections and 3
// copies to the host for the logged statistics, the loss and 4 loss tensors to the host, the
// debug message's 3 .item()s, the loss scale's .item(): 20 (21); per step the statistics of 8
// keys, each all-gathered (2 collectives) with world_size + 6 syncs, and the grad norm's
// .item(). SFT per micro step 4 copies, the loss mask's selection, isnan, .item(): 7; per step 3
// copies, 2 all-reduces, 5 .item()s.
HostCounts host_counts(const Workload& w, const PlanOptions& o, double world) {
  if (w.trainer == "rl") return {20.0 + (o.lora.rank > 0 ? 1 : 0), 8 * (world + 6) + 1, 8 * 2};
  if (w.trainer == "sft") return {7, 8, 2};
  return {};
}

// One small collective over the FSDP group, in microseconds: a hop per other rank (NVLink in a
// node, the NIC and fabric across nodes) and the collective's fixed cost.
double collective_us(const Ctx& c) {
  const Topology& topo = c.topo;
  const RooflineShape& sh = c.sh;
  const bool across = sh.fsdp > sh.gpn;
  const double hop_us =
      across ? topo.node.nic_latency_us + topo.fabric_latency_us : topo.node.nvlink_latency_us;
  return (sh.fsdp - 1) * hop_us + topo.calibration.collective_us;
}

// Launches, FSDP collectives' latency and the per-layer overhead of one pass.
double fixed_s(const Ctx& c, double collectives, double kernels) {
  const Topology& topo = c.topo;
  return (kernels * topo.calibration.kernel_launch_us + collectives * collective_us(c) +
          topo.calibration.layer_overhead_us) *
         1e-6;
}

// The trainer's host terms (HostCounts, kHostLoopUntil): nothing is queued on the GPU while
// the host waits, so each adds to the step whole.
void host_terms(const Ctx& c, const PlanOptions& o, RooflineStep& r) {
  const Workload& w = *o.workload;
  const Calibration& cal = c.topo.calibration;
  const RooflineShape& sh = c.sh;
  if (w.trainer == "rl" && !w.prime_rl_date.empty() && w.prime_rl_date < kHostLoopUntil) {
    // get_response_lengths over the micro step's position_ids (before CP shards them): per
    // token a Python iteration, the index and the comparison (two eager ops), bool() of a
    // CUDA tensor (a device sync).
    const double per_token_s =
        cal.python_iteration_ns * 1e-9 + 2 * cal.eager_op_us * 1e-6 + cal.host_sync_us * 1e-6;
    r.terms.push_back({"host_token_loop", sh.n_micro * sh.t * sh.cp * per_token_s,
                       "prime-rl RL before #2723 (get_response_lengths): tokens x "
                       "(python_iteration_ns + 2 x eager_op_us + host_sync_us)"});
  }
  const HostCounts n = host_counts(w, o, double(sh.fsdp) * sh.cp);
  if (w.trainer.empty()) return;
  const double coll_s = collective_us(c) * 1e-6 + sync_s(c);
  r.terms.push_back(
      {"trainer_host",
       (sh.n_micro * n.syncs_micro + n.syncs_step) * sync_s(c) + n.collectives_step * coll_s,
       "prime-rl " + w.trainer +
           " trainer's loss and logging: syncs per micro step and "
           "per step x (host_sync_us + eager_op_us), small collectives per step"});
}

// prime-rl's gradient clipping (grad_clip.h): its bytes on the HBM, its launches and the norm's
// all-reduces.
void grad_clip_term(const Ctx& c, const ParamInventory& inv, const PlanOptions& o,
                    RooflineStep& r) {
  const GradClipWork g = grad_clip_work(inv, o, c.sh.fsdp, c.sh.ep);
  if (g.bytes <= 0) return;
  r.terms.push_back(
      {"grad_clip",
       g.bytes / c.hbm + launches_s(c, g.launches) + g.collectives * collective_us(c) * 1e-6,
       "prime-rl's gradient clipping (torchtitan clip_grad_norm_, every step): " +
           num(kClipGradPasses) +
           " x master bytes per trained element on the rank (_foreach_norm, "
           "_foreach_mul_) / HBM, their launches and " +
           num(kClipScalarOps) +
           " small ops per norm, the norm's all-reduce over the shard group (2 norms under "
           "EP)"});
}

}  // namespace

RooflineStep roofline_step(const ModelSpec& s, const ParamInventory& inv,
                           const CandidateContext& cand, const RooflineShape& sh) {
  const Topology& topo = cand.topo;
  const PlanOptions& o = cand.o;
  Ctx c{cand,
        topo,
        sh,
        topo.node.gpu.bf16_tflops * 1e12,
        topo.node.gpu.hbm_gbps * kGB * topo.calibration.hbm_efficiency,
        attention_rate(o.workload->attention, topo.node.gpu.compute_capability)};
  const double attn_eff = attention_efficiency(topo.calibration, c.attn.resolved);
  c.attn.forward *= attn_eff;
  c.attn.backward *= attn_eff;
  RooflineStep r;
  const int64_t layers = s.num_layers + (o.include_mtp ? s.mtp_layers : 0);
  for (int64_t layer = 0; layer < layers; ++layer) {
    double before[kClasses];
    std::copy(std::begin(c.fwd), std::end(c.fwd), before);
    UnitWork u = decoder_unit(c, s, inv, o, layer);
    // Forward; backward with the reduce-scatter besides its all-gather; under full AC the
    // recompute (forward again, on backward's gathered weights) inside backward.
    add(c, layer_fixed, fixed_s(c, u.collectives, u.kernels_fwd),
        fixed_s(c, 2 * u.collectives, 2 * u.kernels_fwd));
    double rec = 0;
    const LayerAc ac = layer_ac(*o.workload, layer);
    if (ac == LayerAc::full) {
      for (int k = 0; k < kClasses; ++k) c.rec[k] += k == fsdp_copies ? 0 : c.fwd[k] - before[k];
      rec = u.p.fwd + fixed_s(c, 0, u.kernels_fwd);
      c.rec[layer_fixed] += fixed_s(c, 0, u.kernels_fwd);
    } else if (ac == LayerAc::selective) {
      // Selective: the forward of the targets' functions again, with their GEMMs' launches.
      for (size_t tg = 0; tg < std::size(kAcTargetNames); ++tg) {
        if (!ac_target_on(*o.workload, kAcTargetNames[tg])) continue;
        for (int k = 0; k < kClasses; ++k)
          c.rec[k] += u.target_fwd[tg][k], rec += u.target_fwd[tg][k];
        c.rec[layer_fixed] += launches_s(c, u.target_kernels[tg]);
        rec += launches_s(c, u.target_kernels[tg]);
      }
    }
    const double f = u.p.fwd + u.copies.fwd + fixed_s(c, u.collectives, u.kernels_fwd);
    const double b =
        u.p.bwd + u.copies.bwd + fixed_s(c, 2 * u.collectives, 2 * u.kernels_fwd) + rec;
    r.unit_s[layer] = f + b;
    r.unit_bwd_s[layer] = b;
  }
  const UnitWork head = head_unit(c, s, inv, o);
  r.unit_s[-1] = head.p.fwd + head.p.bwd + head.copies.fwd + head.copies.bwd;
  r.unit_bwd_s[-1] = head.p.bwd + head.copies.bwd;
  for (int k = 0; k < kClasses; ++k) {
    const double micro = c.fwd[k] + c.bwd[k] + c.rec[k];
    r.terms.push_back({kOpClasses[k].name, micro * sh.n_micro, kOpClasses[k].formula(sh)});
  }
  host_terms(c, o, r);
  grad_clip_term(c, inv, o, r);
  r.attention_s = (c.fwd[attention] + c.bwd[attention] + c.rec[attention]) * sh.n_micro;
  for (const Term& t : r.terms) r.compute_s += t.value;
  return r;
}

}  // namespace muonplan
