// The `pytorch` runtime profile: each term from the layout the plan knows and the runtime's
// documented behaviour (docs/planner.md, "Runtime"; constants in the topology's `pytorch:`).
#include "cost/runtime_memory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "muonplan/base/units.h"
#include "muonplan/offload_policy.h"

namespace muonplan {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

double ceil_to(double x, double step) {
  return std::ceil(x / step) * step;
}

// Elements of tensor t on world rank r under the plan's shard rule.
double local_elems(const ParamTensor& t, const Layout& l, int world, int r) {
  const ShardRule sr = shard_rule(t, l, world);
  return double(sr.range(t.shape[0], r).size()) * double(t.numel() / t.shape[0]);
}

// Bytes per element of each array a parameter keeps on the GPU, one allocation each (FSDP2
// keeps every parameter's shard as its own tensor).
std::vector<double> gpu_arrays(const OffloadPolicy& pol, const PlanOptions& o, bool muon_tensor) {
  std::vector<double> a;
  if (pol.bf16_compute_copy) {
    a.push_back(2);
    if (!o.workload) a.push_back(2);
  }
  if (pol.master == Residence::gpu) a.insert(a.end(), {4, 4});
  if (o.optimizer == OptimizerKind::muon && muon_tensor && pol.muon_momentum == Residence::gpu)
    a.push_back(o.bf16_momentum ? 2 : 4);
  const bool adamw_state = o.optimizer == OptimizerKind::adamw || !muon_tensor;
  if (o.optimizer != OptimizerKind::signsgd && adamw_state && pol.adamw_moments == Residence::gpu)
    a.insert(a.end(), {4, 4});
  return a;
}

// Host state arrays per element of a parameter under optimizer offload (pinned per tensor).
std::vector<double> host_state_arrays(const PlanOptions& o, bool muon_tensor) {
  if (o.optimizer == OptimizerKind::signsgd) return {};
  if (o.optimizer == OptimizerKind::muon && muon_tensor) return {o.bf16_momentum ? 2.0 : 4.0};
  return {4, 4};
}

// The largest decoder layer's unsharded elements on one rank: non-expert weights whole, expert
// stacks split over EP (what FSDP2 all-gathers for one layer); with `frozen` LoRA's frozen base
// weights too (gathered, but without gradients).
double max_layer_elems(const ParamInventory& inv, const PlanOptions& o, bool frozen) {
  double best = 0;
  std::map<int64_t, double> layers;
  inv.for_each_weight([&](const ParamTensor& t, bool trained) {
    if ((t.mtp && !o.include_mtp) || t.layer < 0 || (!trained && !frozen)) return;
    const bool expert = t.stack_dim == 0 || t.routed_expert;
    layers[t.layer] += double(t.numel()) / (expert ? o.layout.ep : 1);
  });
  for (const auto& [layer, n] : layers) best = std::max(best, n);
  return best;
}

double term_value(const std::vector<Term>& terms, const std::string& name) {
  for (const Term& t : terms) {
    if (t.name == name) return t.value;
  }
  return 0;
}

void remove_term(std::vector<Term>& terms, const std::string& name) {
  terms.erase(
      std::remove_if(terms.begin(), terms.end(), [&](const Term& t) { return t.name == name; }),
      terms.end());
}

std::string mib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f MiB", bytes / kMiB);
  return buf;
}

void add_gpu_terms(const ModelSpec& spec, const ParamInventory& inv, const Topology& topo,
                   const PlanOptions& o, const ChunkPlan& plan, int peak_rank, Prediction& p);
void add_host_terms(const ModelSpec& spec, const ParamInventory& inv, const Topology& topo,
                    const PlanOptions& o, const ChunkPlan& plan, Prediction& p);
void add_phase_terms(Prediction& p);

}  // namespace

std::vector<NcclComm> nccl_communicators(const Layout& l, int world, int gpn, bool muon_exchange,
                                         bool training, bool ring_cp) {
  std::vector<NcclComm> out;
  // Mesh groups are consecutive ranks: a group stays on one node when it fits in one.
  auto comm = [&](const char* name, int n, bool coll, bool a2a) {
    if (n <= 1) return;
    out.push_back({name, n, std::min(n, gpn), coll, a2a});
  };
  comm("fsdp", l.fsdp, true, muon_exchange);
  if (world / l.ep != l.fsdp) comm("expert_fsdp", world / l.ep, true, false);
  if (training) {
    comm("ep", l.ep, false, true);
    if (ring_cp) {
      // Ring attention talks to its two neighbours only: a 3-rank all-to-all's connections.
      if (l.cp > 1) out.push_back({"cp", std::min(l.cp, 3), std::min({l.cp, 3, gpn}), false, true});
    } else {
      comm("cp", l.cp, false, true);
    }
  }
  return out;
}

double nccl_device_bytes(const NcclComm& c, const PytorchRuntime& rt, bool nvlink) {
  const double conn = rt.nccl_connection_mib * kMiB;
  double b = 0;
  if (c.collectives) {
    b += conn * rt.nccl_ring_channels;
    if (nvlink && c.local_ranks > 1) b += rt.nccl_nvls_mib_per_local_gpu * kMiB * c.local_ranks;
  }
  if (c.all_to_all) {
    const int local_peers = c.local_ranks - 1, net_peers = c.ranks - c.local_ranks;
    b += conn * (double(local_peers) * rt.nccl_p2p_channels_nvlink_peer +
                 double(net_peers) * rt.nccl_p2p_channels_net_peer);
    // Network p2p pool: 16 chunks per channel, each direction.
    if (net_peers > 0) b += 2.0 * rt.nccl_p2p_channels_net_peer * 16 * rt.nccl_net_chunk_kib * 1024;
  }
  return b;
}

double allocator_block_bytes(double bytes, double round) {
  const double block = ceil_to(std::max(bytes, 1.0), std::max(512.0, round));
  if (block < 10 * kMiB) return block;  // small pool, or split from a shared 20 MiB segment
  const double tail = ceil_to(block, 2 * kMiB) - block;
  return tail <= kMiB ? block + tail : block;  // a tail above 1 MiB splits off, reusable
}

double pinned_block_bytes(double bytes) {
  if (bytes <= 1) return 1;
  return std::exp2(std::ceil(std::log2(bytes)));
}

void add_pytorch_runtime_terms(const ModelSpec& spec, const ParamInventory& inv,
                               const Topology& topo, const PlanOptions& o, const ChunkPlan& plan,
                               int peak_rank, Prediction& p) {
  add_gpu_terms(spec, inv, topo, o, plan, peak_rank, p);
  add_host_terms(spec, inv, topo, o, plan, p);
}

namespace {

// Outside the allocator: the CUDA context and the NCCL buffers of every communicator.
void add_outside_terms(const Topology& topo, const PlanOptions& o, const ChunkPlan& plan,
                       Prediction& p) {
  const PytorchRuntime& rt = topo.pytorch;
  const int world = plan.world;
  const int gpn = o.gpus_per_node > 0 ? o.gpus_per_node : topo.node.gpus;
  const Layout& l = plan.layout;
  p.gpu_fixed_bytes.clear();
  p.gpu_fixed_bytes.push_back(
      {"cuda_context", rt.cuda_context_gib * kGiB, "per GPU with lazy module loading"});
  bool exchange = false;
  for (const Chunk& c : plan.chunks)
    exchange = exchange || (c.kind == Chunk::Kind::muon_batch && c.group_size > 1);
  exchange = exchange && o.optimizer == OptimizerKind::muon;
  const bool ring_cp = o.workload && o.workload->cp_style == CpStyle::ring;
  for (const NcclComm& c : nccl_communicators(l, world, gpn, exchange, bool(o.workload), ring_cp)) {
    const int peers = c.ranks - 1, net = c.ranks - c.local_ranks;
    std::string f = std::to_string(c.ranks) + " ranks:";
    if (c.collectives)
      f += " ring " + std::to_string(rt.nccl_ring_channels) + " channels x " +
           mib(rt.nccl_connection_mib * kMiB) +
           (topo.node.nvlink_gbps > 0 && c.local_ranks > 1 ? " + NVLS" : "");
    if (c.all_to_all)
      f += std::string(c.collectives ? ";" : "") + " all-to-all " + std::to_string(peers - net) +
           " NVLink peer(s) x " + std::to_string(rt.nccl_p2p_channels_nvlink_peer) + " + " +
           std::to_string(net) + " network peer(s) x " +
           std::to_string(rt.nccl_p2p_channels_net_peer) + " channels x " +
           mib(rt.nccl_connection_mib * kMiB);
    p.gpu_fixed_bytes.push_back(
        {"nccl_" + c.name, nccl_device_bytes(c, rt, topo.node.nvlink_gbps > 0), f});
  }
}

void add_gpu_terms(const ModelSpec& spec, const ParamInventory& inv, const Topology& topo,
                   const PlanOptions& o, const ChunkPlan& plan, int peak_rank, Prediction& p) {
  const PytorchRuntime& rt = topo.pytorch;
  const int world = plan.world;
  const OffloadPolicy& pol = offload_policy(o.offload, o.optimizer_staging);
  const Layout& l = plan.layout;
  add_outside_terms(topo, o, plan, p);
  p.gpu_runtime_bytes.push_back({"cublas_workspace",
                                 rt.cublas_workspace_mib * kMiB * rt.gemm_streams,
                                 std::to_string(rt.gemm_streams) + " GEMM stream(s) x " +
                                     mib(rt.cublas_workspace_mib * kMiB)});
  // Block rounding of every parameter array the GPU keeps, each its own allocation.
  double rounding = 0;
  for (const ParamTensor& t : inv.tensors) {
    if (t.mtp && !o.include_mtp) continue;
    const double n = local_elems(t, l, world, peak_rank);
    if (n <= 0) continue;
    for (double b : gpu_arrays(pol, o, t.rule == UpdateRule::muon))
      rounding += allocator_block_bytes(n * b, rt.allocator_round_bytes) - n * b;
  }
  p.gpu_reserve_bytes.push_back(
      {"allocator_rounding", rounding,
       "each parameter array's shard rounded to its caching-allocator block"});
  double varying = 0;
  if (o.workload) {
    const Workload& w = *o.workload;
    const double layer = max_layer_elems(inv, o, false);  // trained: their gradients
    const double gathered = max_layer_elems(inv, o, true);
    // FSDP2 backward: the unsharded bf16 gradients of the group, and the previous group's fp32
    // reduce-scatter input, held until the next post_backward.
    p.gpu_runtime_bytes.push_back(
        {"fsdp2_unsharded_grads_bf16", 2 * layer, "bf16 gradients of one unsharded layer"});
    p.gpu_runtime_bytes.push_back(
        {"fsdp2_rs_input_held", 4 * layer,
         "previous layer's fp32 reduce-scatter input, held until the next post_backward"});
    if (w.ac_full && w.ac_offload && rt.ac_offload_inflight_layers > 2) {
      const double t = double(w.seq_len) / l.cp * double(w.micro_batch_seqs);
      const double h = double(spec.hidden_size);
      p.gpu_runtime_bytes.push_back(
          {"ac_offload_inflight", (rt.ac_offload_inflight_layers - 2) * 2 * t * h,
           std::to_string(rt.ac_offload_inflight_layers) +
               " layer inputs in flight to the host, beyond the 2 counted"});
    }
    // The all-gather stream's pool keeps its forward high-water (2 flat buffers), which the
    // default stream cannot reuse; in backward one is live.
    p.gpu_reserve_bytes.push_back({"fsdp2_all_gather_pool", 2 * gathered,
                                   "one bf16 flat buffer cached in the all-gather stream's pool"});
    for (const char* name :
         {"recomputed_layer_activations", "activations", "lm_head_chunk_logits", "logits"})
      varying += term_value(p.gpu_workload_bytes, name);
  } else {
    varying = term_value(p.gpu_transient_bytes, "step_buffers");
  }
  p.gpu_reserve_bytes.push_back({"transient_fragmentation", varying * rt.transient_fragmentation,
                                 "transient_fragmentation x transient buffers of varying size"});
  if (o.workload) add_phase_terms(p);
}

// In a training step the optimizer step runs after backward has freed its buffers: the
// allocated peak is the larger of the two phases, and the step's buffers reuse the blocks
// backward left cached (reserved: the larger of backward's reserved and the step's buffers).
void add_phase_terms(Prediction& p) {
  double bwd = sum(p.gpu_workload_bytes), bwd_reserve = 0;
  for (const char* name :
       {"fsdp2_unsharded_grads_bf16", "fsdp2_rs_input_held", "ac_offload_inflight"})
    bwd += term_value(p.gpu_runtime_bytes, name);
  for (const char* name : {"fsdp2_all_gather_pool", "transient_fragmentation"})
    bwd_reserve += term_value(p.gpu_reserve_bytes, name);
  const double step = sum(p.gpu_transient_bytes);
  const double alloc_overlap = std::min(bwd, step);
  p.gpu_runtime_bytes.push_back(
      {"optimizer_step_after_backward", -alloc_overlap,
       "- min(backward buffers, optimizer-step buffers): the phases do not overlap"});
  p.gpu_reserve_bytes.push_back({"optimizer_step_reuses_cache",
                                 -(std::min(bwd + bwd_reserve, step) - alloc_overlap),
                                 "the optimizer step's buffers reuse blocks backward left cached"});
}

void add_host_terms(const ModelSpec& spec, const ParamInventory& inv, const Topology& topo,
                    const PlanOptions& o, const ChunkPlan& plan, Prediction& p) {
  const PytorchRuntime& rt = topo.pytorch;
  const int world = plan.world;
  const int gpn = o.gpus_per_node > 0 ? o.gpus_per_node : topo.node.gpus;
  remove_term(p.host_bytes_per_node, "process_overhead");
  p.host_bytes_per_node.push_back({"host_runtime", rt.host_per_rank_gib * kGiB * gpn,
                                   "resident runtime and libraries per rank x ranks"});
  double pinned_extra = 0;
  if (o.offload == OffloadMode::optimizer && (rt.optimizer_state_pinned || o.pinned_host_state)) {
    for (int r = 0; r < std::min(gpn, world); ++r) {
      for (const ParamTensor& t : inv.tensors) {
        if (t.mtp && !o.include_mtp) continue;
        const double n = local_elems(t, o.layout, world, r);
        if (n <= 0) continue;
        for (double b : host_state_arrays(o, t.rule == UpdateRule::muon))
          pinned_extra += pinned_block_bytes(n * b) - n * b;
      }
    }
  }
  if (o.workload && o.workload->ac_full && o.workload->ac_offload) {
    const Workload& w = *o.workload;
    const double in =
        2 * double(w.seq_len) / o.layout.cp * double(w.micro_batch_seqs) * double(spec.hidden_size);
    const int64_t layers = spec.num_layers + (o.include_mtp ? spec.mtp_layers : 0);
    pinned_extra += double(layers) * gpn * (pinned_block_bytes(in) - in);
  }
  const double staging = term_value(p.host_bytes_per_node, "pinned_staging");
  if (staging > 0) {
    double largest = 0;
    for (const Chunk& c : plan.chunks) {
      if (c.kind != Chunk::Kind::adamw_group)
        largest = std::max(largest, 2.0 * double(c.params) / std::max(1, c.group_size));
    }
    const double buffers = std::round(staging / largest);
    pinned_extra += buffers * (pinned_block_bytes(largest) - largest);
  }
  p.host_bytes_per_node.push_back(
      {"pinned_rounding", pinned_extra, "each pinned host buffer rounded up to a power of two"});
  const size_t comms = nccl_communicators(o.layout, world, gpn, o.optimizer == OptimizerKind::muon,
                                          bool(o.workload), false)
                           .size();
  p.host_bytes_per_node.push_back({"nccl_work_fifo",
                                   rt.nccl_work_fifo_mib * kMiB * double(comms) * gpn,
                                   "pinned work FIFO per communicator per rank"});
}

}  // namespace
}  // namespace muonplan
