// Workload terms: traffic, time and AC offload's host RAM of the training step around the
// optimizer step; its GPU bytes are the step timeline's (step_timeline.h, runtime_memory.h).
// Compute is each operation's roofline (roofline.cc). Every figure is per micro step first,
// then summed over the step's micro steps (docs/planner.md section 8).
#include "cost/workload_cost.h"

#include "cost/roofline.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "cost/ac_layers.h"
#include "cost/activation_sizes.h"
#include "cost/candidate_context.h"
#include "cost/weight_broadcast.h"
#include "muonplan/base/checked_int.h"
#include "muonplan/base/error.h"
#include "muonplan/base/units.h"
#include "muonplan/planfile/offload_policy.h"
#include "muonplan/planner/workload.h"

namespace muonplan {
namespace {

// Parameters by FSDP unit (a decoder layer; -1: embeddings, final norm and LM head): the trained
// elements on one rank (its share), Muon's and all. A unit of LoRA's frozen weights only has
// none, and still its backward (add_offloaded_backward).
struct Unit {
  double muon = 0, all = 0;
};

double link_for_group(int group, int gpn, const step_cost::Rates& r) {
  return step_cost::group_on_one_node(group, gpn) ? r.intra_bps : r.inter_bps;
}

}  // namespace

HostPasses host_passes(const PlanOptions& o) {
  if (o.runtime != RuntimeKind::pytorch) return {};
  return {4 + 2, 4 + 2 + 4, 4 + 2};
}

std::string bounding_resource(const PipelineResult& r) {
  size_t best = 0;
  for (size_t i = 1; i < r.busy_s.size(); ++i) {
    if (r.busy_s[i] > r.busy_s[best]) best = i;
  }
  if (r.busy_s.empty() || r.busy_s[best] <= 0) return "";
  char buf[96];
  std::snprintf(buf, sizeof buf, "bound by %s: %.2f s busy of %.2f s",
                to_string(static_cast<Resource>(best)), r.busy_s[best], r.makespan_s);
  return buf;
}

// The step's cost walks its micro steps one by one (each one's prefetch, offload and AC
// traffic), so their count is bounded: 2^30 tokens of seq_len 1 on 8 ranks were 1.3e8 micro
// steps and 37 s for one candidate, 2^62 from Python never returned (issue 33 item 12). A
// real step has at most a few hundred (prime-rl's default: 128 rows over the data-parallel
// groups); 65536 keeps a candidate under about 20 ms and refuses only what no trainer runs.
constexpr int64_t kMaxMicroSteps = 65536;

int64_t micro_steps(const Workload& w, int world, const Layout& l) {
  if (w.seq_len % l.cp != 0) {
    throw InputError({}, "--layout",
                     "cp=" + std::to_string(l.cp) + " does not divide the sequence length " +
                         std::to_string(w.seq_len));
  }
  const int64_t dp = world / l.cp;
  const int64_t seqs = w.tokens_per_step / w.seq_len;
  const int64_t per_micro = checked_mul(dp, w.micro_batch_seqs, "--micro-batch-seqs",
                                        "data-parallel groups x sequences per micro step");
  // The batch rule (docs/trainer-config.md, "Tokens per step"): whole rows (to_plan_request
  // checks it), dealt out whole to every data-parallel rank, at least one each.
  if (seqs % per_micro != 0 || seqs == 0) {
    const int64_t below = seqs / per_micro * per_micro;
    const int64_t above = checked_add(below, per_micro, "--tokens-per-step", "rows");
    const std::string up =
        std::to_string(checked_mul(above, w.seq_len, "--tokens-per-step", "rows x seq_len"));
    throw InputError(
        {}, "--tokens-per-step",
        std::to_string(seqs) + " sequences per step do not split over " + std::to_string(dp) +
            " data-parallel groups (world " + std::to_string(world) + " / cp " +
            std::to_string(l.cp) + ") x " + std::to_string(w.micro_batch_seqs) +
            " sequences per micro step; the nearest that do: " +
            (below > 0 ? std::to_string(below * w.seq_len) + " or " : "") + up + " tokens");
  }
  const int64_t n = seqs / per_micro;
  if (n > kMaxMicroSteps) {
    throw InputError(
        {}, "--tokens-per-step",
        std::to_string(n) + " micro steps per step (" + std::to_string(seqs) + " sequences / (" +
            std::to_string(dp) + " data-parallel groups x " + std::to_string(w.micro_batch_seqs) +
            " per micro step)) is more than muonplan plans for (" + std::to_string(kMaxMicroSteps) +
            "): raise --micro-batch-seqs or --seq-len, or lower --tokens-per-step");
  }
  return n;
}

namespace {

// What every part of a training step's cost reads: the workload's shape on this layout, and
// the parameters by FSDP unit.
struct StepShape {
  const CandidateContext& cc;
  const Workload& w;
  int world, gpn;
  const Layout& l;
  double n_micro = 0;
  double t = 0;  // tokens per rank per micro step
  double h = 0;  // hidden size
  int64_t layers = 0;
  Heads a{};
  std::map<int64_t, Unit> units{};
  double expert_total = 0, non_expert = 0;          // trained elements
  double frozen_expert = 0, frozen_non_expert = 0;  // LoRA's frozen elements
  double offloaded_inputs = 0;  // AC offload's bytes to the host per micro step (ac_layers.h)
};

// Parameters per FSDP unit, and each rank's share of them.
void count_units(StepShape& sh, const ParamInventory& inv, const PlanOptions& o) {
  const Layout& l = sh.l;
  std::map<int64_t, Unit>& units = sh.units;
  double& expert_total = sh.expert_total;
  double& non_expert = sh.non_expert;
  inv.for_each_weight([&](const ParamTensor& pt, bool trained) {
    if (pt.mtp && !o.include_mtp) return;
    const double n = double(pt.numel());
    Unit& u = units[pt.layer];
    const bool expert = pt.is_expert();
    if (!trained) {  // LoRA's frozen base weights: gathered, but no gradient
      (expert ? sh.frozen_expert : sh.frozen_non_expert) += n;
      return;
    }
    // Every param is split over the F ranks of a shard group, experts as ep x (F / ep), and
    // the world / F replica groups hold alike (prime-rl's HSDP mesh; shards.h).
    const double share = n / l.fsdp;
    u.all += share;
    if (pt.rule == UpdateRule::muon) u.muon += share;
    (expert ? expert_total : non_expert) += n;
  });
}

StepShape step_shape(const ModelSpec& s, const ParamInventory& inv, const CandidateContext& cc,
                     const ChunkPlan& plan) {
  const PlanOptions& o = cc.o;
  const Workload& w = *o.workload;
  if (s.moe.num_experts > 0 && s.moe.experts_per_token == 0) {
    throw InputError({}, "moe.experts_per_token",
                     "model " + s.name +
                         " does not say how many experts each token uses; a "
                         "workload needs it");
  }
  const int world = plan.world;
  const Layout& l = plan.layout;
  StepShape sh{cc, w, world, cc.gpus_per_node, l};
  sh.n_micro = double(micro_steps(w, world, l));
  sh.t = micro_step_tokens(w, l);
  sh.h = double(s.hidden_size);
  sh.layers = s.num_layers + (o.include_mtp ? s.mtp_layers : 0);
  sh.a = heads_of(s);
  count_units(sh, inv, o);
  check_ac_targets(s, w, sh.layers);
  if (w.ac_offload && (w.ac_selective || w.ac_freq > 1))
    throw InputError({}, "--ac-offload",
                     "planned with full AC on every layer only (--ac full --ac-freq 1): what "
                     "prime-rl offloads under selective AC or AC every few layers is not modelled");
  for (double b : ac_offload_host_buffers(s, o)) sh.offloaded_inputs += b;
  return sh;
}

// Host RAM of AC offload's buffers (ac_layers.h): every layer input of a micro step, on each of
// the node's ranks. The GPU bytes of a training step are its timeline's (runtime_memory.h).
void add_workload_host_memory(Prediction& p, const ModelSpec& s, const PlanOptions& o,
                              const StepShape& sh) {
  const std::vector<double> buffers = ac_offload_host_buffers(s, o);
  if (buffers.empty()) return;
  double bytes = 0;
  for (double b : buffers) bytes += b;
  p.host_bytes_per_node.push_back(
      {"ac_offload", bytes * sh.gpn, "checkpointed layer inputs of the node's ranks"});
}

// Seconds of a training step's collectives per GPU, before overlap with compute.
struct CommSeconds {
  double fsdp_s = 0, ep_s = 0, cp_s = 0;
};

// Traffic per GPU per step (every micro step moves its own).
CommSeconds add_workload_traffic(Prediction& p, const ModelSpec& s, const StepShape& sh) {
  const Workload& w = sh.w;
  const Layout& l = sh.l;
  const int world = sh.world, gpn = sh.gpn;
  const double n_micro = sh.n_micro, t = sh.t, h = sh.h;
  const double rb = double(w.reduce_bytes);  // reduce_dtype: 4 float32, 2 bfloat16
  const double non_expert = sh.non_expert, expert_total = sh.expert_total;
  const int64_t layers = sh.layers;
  const Heads& a = sh.a;
  const step_cost::Rates& r = sh.cc.rates;
  // FSDP: all-gather bf16 weights twice (forward, backward), reduce-scatter fp32 grads, over
  // the non-expert group (fsdp) and the expert group (fsdp / ep, inside it); under HSDP, then
  // all-reduce each rank's gradient shard over the world / fsdp replicas (FSDP2's 2-D mesh).
  // LoRA's frozen weights are gathered as the trained ones are, but have no gradient to
  // reduce-scatter.
  const double f = double(l.fsdp), de = double(l.fsdp / l.ep), replicas = double(world / l.fsdp);
  const double gathered = non_expert + sh.frozen_non_expert;
  const double gathered_expert = expert_total + sh.frozen_expert;
  const double ag =
      n_micro * (2 * 2 * gathered * (f - 1) / f + 2 * 2 * gathered_expert / l.ep * (de - 1) / de);
  const double rs =
      n_micro * (rb * non_expert * (f - 1) / f + rb * expert_total / l.ep * (de - 1) / de);
  p.comm_bytes.push_back({"fsdp_all_gather", ag, "bf16 weights, forward and backward"});
  p.comm_bytes.push_back({"fsdp_reduce_scatter", rs,
                          std::string(dtype_name(int64_t(rb))) + " gradients (reduce_dtype)"});
  // The replicas of one shard position are F ranks apart: on other nodes once the world is.
  const double ar = n_micro * rb * (non_expert + expert_total) / f * 2 * (replicas - 1) / replicas;
  if (replicas > 1) {
    p.comm_bytes.push_back(
        {"hsdp_all_reduce", ar,
         std::string(dtype_name(int64_t(rb))) + " gradient shards over the dp_replicate groups"});
  }
  // The expert group's ranks are ep apart inside the shard group: on one node while it is.
  const double fsdp_link = l.fsdp > gpn ? r.inter_bps : r.intra_bps;
  const double replica_link = world > gpn ? r.inter_bps : r.intra_bps;
  const double fsdp_s = (ag + rs) / fsdp_link + ar / replica_link;
  // Passes over the layers per micro step: forward, backward, and the recompute of full AC.
  const double passes = w.ac_full ? 3 : 2;
  int64_t moe_layers = 0;
  for (int64_t i = 0; i < layers; ++i) moe_layers += s.is_moe_layer(i) ? 1 : 0;
  // Per layer under selective AC or AC every few layers (ac_layers.h): a selective layer runs
  // its routed experts' exchanges again when they are a target, attention's never. Written as
  // passes x layers (1 x the layer passes when they differ).
  double ep_passes = passes, ep_layers = double(moe_layers);
  double cp_passes = passes, cp_layers = double(layers), ring_passes = passes + 1;
  if (w.ac_selective || w.ac_freq > 1) {
    ep_passes = cp_passes = ring_passes = 1;
    ep_layers = cp_layers = 0;
    for (int64_t i = 0; i < layers; ++i) {
      const LayerAc ac = layer_ac(w, i);
      cp_layers += ac == LayerAc::full ? 3 : 2;
      const bool experts_again =
          ac == LayerAc::full || (ac == LayerAc::selective && ac_target_on(w, "routed_experts"));
      if (s.is_moe_layer(i)) ep_layers += experts_again ? 3 : 2;
    }
  }
  const double ring_layers = ring_passes == 1 ? cp_layers + double(layers) : double(layers);
  // Expert parallelism: each token's hidden state to its top-k experts (dispatch) and back
  // (combine); the share bound for other EP ranks leaves the rank.
  const double ep_bytes =
      l.ep > 1 ? n_micro * ep_passes * ep_layers * 2 * t * sh.cc.top_k * h * 2 * (l.ep - 1) / l.ep
               : 0;
  const double ep_s = ep_bytes / link_for_group(l.ep, gpn, r);
  // Context parallelism. Ulysses: q, k, v to head-sharded ranks and the output back; ring: k/v
  // blocks around the ring, cp - 1 hops, twice in backward (k/v and their gradients).
  double cp_bytes = 0;
  if (l.cp > 1 && w.cp_style == CpStyle::ulysses) {
    cp_bytes = n_micro * cp_passes * cp_layers * t *
               (a.q * a.qk + a.kv * (a.qk + a.v) + a.q * a.v) * 2 * (l.cp - 1) / l.cp;
  } else if (l.cp > 1) {
    cp_bytes = n_micro * ring_passes * ring_layers * (l.cp - 1) * t * a.kv * (a.qk + a.v) * 2;
  }
  const double cp_s = cp_bytes / link_for_group(l.cp, gpn, r);
  p.comm_bytes.push_back({"ep_dispatch_combine", ep_bytes,
                          "tokens to their experts and back, forward, backward and recompute"});
  p.comm_bytes.push_back({"cp_attention", cp_bytes,
                          std::string(to_string(w.cp_style)) + " exchanges of attention inputs"});
  return {fsdp_s, ep_s, cp_s};
}

// The model's compute per rank and step, operation by operation (roofline.cc).
struct ComputeSeconds {
  RooflineStep roof;
  double compute_s = 0, attn_s = 0;
};

ComputeSeconds compute_seconds(const ModelSpec& s, const ParamInventory& inv, const StepShape& sh) {
  const Workload& w = sh.w;
  const RooflineShape rs{sh.t,    sh.n_micro, double(w.seq_len), double(w.micro_batch_seqs),
                         sh.l.cp, sh.l.ep,    sh.l.fsdp,         sh.gpn,
                         sh.a.q,  sh.a.kv,    sh.a.qk,           sh.a.v};
  ComputeSeconds c;
  c.roof = roofline_step(s, inv, sh.cc, rs);
  c.compute_s = c.roof.compute_s;
  c.attn_s = c.roof.attention_s;
  return c;
}

// Forward and backward, and the communication compute does not hide.
void add_compute_terms(Prediction& p, const StepShape& sh, const CommSeconds& comm,
                       const ComputeSeconds& c) {
  const Topology& topo = sh.cc.topo;
  const Workload& w = sh.w;
  const Calibration& cal = topo.calibration;
  const double compute_s = c.compute_s, attn_s = c.attn_s;
  const double fsdp_s = comm.fsdp_s, ep_s = comm.ep_s, cp_s = comm.cp_s;
  // Each offloaded input out in forward and back in backward, pinned both ways.
  const double ac_s = sh.n_micro * sh.offloaded_inputs *
                      (1 / sh.cc.rates.pinned_d2h_bps + 1 / sh.cc.rates.pinned_h2d_bps);
  // prime-rl's copies run on the compute stream (ac_layers.h): the whole of it adds.
  const bool ac_serial = offload_copies_on_compute_stream(w);

  auto hidden = [](double comm_s, double cover) { return std::min(comm_s, std::max(0.0, cover)); };
  const double ep_hidden = hidden(ep_s * cal.ep_comm_overlap, compute_s);
  const double cp_hidden = w.cp_style == CpStyle::ring ? hidden(cp_s, attn_s)
                                                       : hidden(cp_s * cal.cp_comm_overlap, attn_s);
  const std::string micro = ", " + std::to_string(int64_t(sh.n_micro)) + " micro step(s)";
  for (const Term& t : c.roof.terms)
    p.training_terms_s.push_back({t.name, t.value, t.formula + micro});
  p.training_terms_s.push_back({"exposed_fsdp_comm", std::max(0.0, fsdp_s - compute_s),
                                "FSDP traffic not hidden by compute"});
  // The hidden part is not free: NCCL's collective kernels hold one SM per channel while they
  // run, so the compute under them runs on the other SMs.
  const double sms = std::max(1, topo.node.gpu.sm_count);
  const double nccl_share = std::min(1.0, topo.pytorch.nccl_ring_channels / sms);
  p.training_terms_s.push_back(
      {"fsdp_sm_contention", std::min(fsdp_s, compute_s) * nccl_share,
       "FSDP collectives under compute x nccl_ring_channels / sm_count: the SMs NCCL's kernels "
       "hold while compute runs beside them"});
  p.training_terms_s.push_back(
      {"exposed_ep_comm", ep_s - ep_hidden, "dispatch/combine not hidden (ep_comm_overlap)"});
  p.training_terms_s.push_back({"exposed_cp_comm", cp_s - cp_hidden,
                                w.cp_style == CpStyle::ring
                                    ? "ring hops not hidden by attention compute"
                                    : "Ulysses all-to-alls not hidden (cp_comm_overlap)"});
  p.training_terms_s.push_back(
      {"exposed_ac_offload", ac_serial ? ac_s : std::max(0.0, ac_s - compute_s),
       ac_serial ? "AC offload's copies on the compute stream (prime-rl's OffloadActivations "
                   "runs without streams): layer inputs x micro steps / pinned D2H + / pinned "
                   "H2D, nothing hidden"
                 : "AC offload traffic not hidden"});
  p.training_hidden_s.push_back({"fsdp_comm", std::min(fsdp_s, compute_s), "under compute"});
  p.training_hidden_s.push_back({"ep_comm", ep_hidden, "under compute"});
  p.training_hidden_s.push_back({"cp_comm", cp_hidden, "under attention compute"});
}

// Full offload: each unit's bf16 gradients go to the host as backward produces them, and
// the host accumulates them (micro steps before the last) or folds them into the momentum
// and updates AdamW/signSGD params (the last), while backward goes on. Two resources in
// order (PCIe D2H, then CPU), each FIFO; what outlasts the last backward is exposed.
void add_offloaded_backward(Prediction& p, const StepShape& sh, const ComputeSeconds& c,
                            const OptimizerPhases& opt) {
  const double n_micro = sh.n_micro, compute_s = c.compute_s;
  const std::map<int64_t, Unit>& units = sh.units;
  double bwd_s = 0;  // one micro step
  for (const auto& [layer, b] : c.roof.unit_bwd_s) bwd_s += b;
  const ElemBytes& eb = sh.cc.bytes;  // the host's passes per element (candidate_context.h)
  double clock = 0, d2h_free = 0, cpu_free = 0, d2h_busy = 0, cpu_busy = 0;
  for (int64_t m = 0; m < int64_t(n_micro); ++m) {
    clock += compute_s / n_micro - bwd_s;  // forward
    const bool last = m + 1 == int64_t(n_micro);
    // Backward order: layers from the last; the root unit (-1: embeddings, LM head, final
    // norm) last, where FSDP reduces it.
    for (auto it = units.rbegin(); it != units.rend(); ++it) {
      const Unit& u = it->second;
      const auto b = c.roof.unit_bwd_s.find(it->first);
      clock += b == c.roof.unit_bwd_s.end() ? 0 : b->second;
      const double d2h = 2 * u.all / opt.d2h_bps;
      d2h_free = std::max(clock, d2h_free) + d2h;
      // Host bytes per element: accumulate (write fp32; later read it too), or at the last
      // micro step fold Muon's momentum (read grad, M) / update the host-updated params.
      const double g = n_micro > 1 ? 2 + 4 : 2;
      const double cpu_bytes =
          !last ? u.all * (m == 0 ? 6 : 10)
                : u.muon * (g + eb.host_fold) + (u.all - u.muon) * (g + eb.host_update);
      const double cpu = cpu_bytes / opt.cpu_bps_per_rank;
      cpu_free = std::max(d2h_free, cpu_free) + cpu;
      d2h_busy += d2h;
      cpu_busy += cpu;
    }
  }
  const double exposed = std::max(0.0, std::max(d2h_free, cpu_free) - clock);
  p.training_hidden_s.push_back(
      {"backward_grads_d2h", d2h_busy, "bf16 gradients to the host during backward"});
  p.training_hidden_s.push_back(
      {"backward_host_work", cpu_busy,
       "host accumulation, Muon momentum fold, AdamW/signSGD updates during backward"});
  p.training_terms_s.push_back({"exposed_backward_offload", exposed,
                                "gradient offload and host work that outlast backward"});
  p.training_terms_s.push_back(
      {"post_backward_optimizer", opt.post_backward_s,
       "momentum H2D, NS and exchanges, update D2H, host apply, weights H2D (Muon batches)" +
           (opt.post_backward_bound.empty() ? std::string() : "; " + opt.post_backward_bound)});
  p.training_terms_s.push_back({"weight_upload", 2 * opt.host_update_elems / opt.h2d_bps,
                                "bf16 weights of the host-updated params H2D after backward"});
}

// What the trainer runs between two steps, outside the step's clock (docs/planner.md section 8,
// "Between steps"): prime-rl's RL trainer hands its weights to the inference servers at the
// top of each loop iteration (weight_broadcast.h): by the filesystem, at the host's fitted
// rate, or (full fine-tuning) by NCCL, its gathers and broadcasts on the links. Nothing is
// listed where there is no broadcast, or the filesystem's and the topology gives no rate.
void add_between_steps(Prediction& p, const ParamInventory& inv, const CandidateContext& cc) {
  const double bytes = weight_broadcast_bytes(inv, cc.o);
  if (bytes <= 0) return;
  const bool nccl = cc.o.workload->weight_broadcast == "nccl";
  if (nccl && cc.o.lora.rank == 0) {
    const NcclBroadcast b = nccl_broadcast(inv, cc.o, cc.rates, cc.world, cc.gpus_per_node);
    char what[400];
    std::snprintf(what, sizeof what,
                  "prime-rl's NCCL weight broadcast, every rank: each of %lld tensors cast to "
                  "bf16 and gathered whole over the FSDP group (%.3f GB)",
                  static_cast<long long>(b.tensors), b.bytes / kGB);
    p.between_steps_s.push_back({"weight_gather", b.gather_s, what});
    std::snprintf(what, sizeof what,
                  "rank 0, %lld groups (outside the layers, then each layer): concatenated and "
                  "broadcast to the inference GPUs %s, 3 broadcasts a group; the handshake "
                  "before it not counted",
                  static_cast<long long>(b.groups),
                  b.peers_local ? "on its node" : "across the network");
    p.between_steps_s.push_back({"weight_broadcast", b.send_s, what});
    return;
  }
  const double gbps = cc.topo.calibration.weight_broadcast_gbps;
  if (gbps <= 0) return;
  char what[300];
  std::snprintf(what, sizeof what,
                "prime-rl's filesystem weight broadcast: %.3f GB (%s) / weight_broadcast_gbps "
                "%g%s",
                bytes / kGB,
                cc.o.lora.rank > 0 ? "each active run's adapter slot" : "every parameter, bf16",
                gbps, nccl ? "; NCCL's broadcast with LoRA is not modelled: the filesystem's" : "");
  p.between_steps_s.push_back({"weight_broadcast", bytes / (gbps * kGB), what});
}

}  // namespace

// A training step's memory, traffic and time around the optimizer step (docs/planner.md,
// "Workload"); each part in its own function above.
void add_workload_terms(const ModelSpec& s, const ParamInventory& inv, const CandidateContext& cc,
                        const ChunkPlan& plan, const OptimizerPhases& opt, Prediction& p) {
  const PlanOptions& o = cc.o;
  const StepShape sh = step_shape(s, inv, cc, plan);
  add_workload_host_memory(p, s, o, sh);
  const CommSeconds comm = add_workload_traffic(p, s, sh);
  const ComputeSeconds c = compute_seconds(s, inv, sh);
  add_compute_terms(p, sh, comm, c);
  if (!offload_policy(o.offload, o.optimizer_staging).host_fold) {
    p.training_terms_s.push_back(
        {"optimizer_step", p.optimizer_step_s, "after backward (section 7)"});
  } else {
    add_offloaded_backward(p, sh, c, opt);
  }
  p.training_step_s = sum(p.training_terms_s);
  add_between_steps(p, inv, cc);
  p.step_time_calibration = cc.topo.calibration.step_time_calibrated_on;
}

}  // namespace muonplan
