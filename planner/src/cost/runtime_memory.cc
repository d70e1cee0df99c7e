// The `pytorch` runtime profile: each term from the layout the plan knows and the runtime's
// documented behaviour (docs/planner.md, "Runtime"; constants in the topology's `pytorch:`).
#include "cost/runtime_memory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include "cost/ac_layers.h"
#include "cost/candidate_context.h"
#include "cost/step_timeline.h"
#include "muonplan/base/units.h"
#include "muonplan/planfile/offload_policy.h"
#include "muonplan/planner/workload.h"

namespace muonplan {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// Elements of tensor t on world rank r under the plan's shard rule.
double local_elems(const ParamTensor& t, const Layout& l, int world, int r) {
  const ShardRule sr = shard_rule(t, l, world);
  return double(sr.range(t.shape[0], r).size()) * double(t.numel() / t.shape[0]);
}

// Host state arrays per element of a parameter under optimizer offload (pinned per tensor):
// Muon's momentum, or AdamW's two moments, at the candidate's bytes (candidate_context.h).
std::vector<double> host_state_arrays(const CandidateContext& cc, bool muon_tensor) {
  const PlanOptions& o = cc.o;
  if (o.optimizer == OptimizerKind::signsgd) return {};
  if (o.optimizer == OptimizerKind::muon && muon_tensor) return {cc.bytes.muon_state};
  return {cc.bytes.adamw_state / 2, cc.bytes.adamw_state / 2};
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

void set_allocated_terms(const TimelinePeak& peak, const TimelineInputs& in, Prediction& p);
void add_gpu_terms(const CandidateContext& cc, const ChunkPlan& plan, Prediction& p);
void add_host_terms(const ModelSpec& spec, const ParamInventory& inv, const CandidateContext& cc,
                    const ChunkPlan& plan, Prediction& p);
void add_simulated_terms(const ModelSpec& spec, const ParamInventory& inv, const Topology& topo,
                         const PlanOptions& o, const ChunkPlan& plan, int peak_rank, Prediction& p);

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
  if (l.ep > 1) comm("expert_fsdp", l.fsdp / l.ep, true, false);
  if (training && world > l.fsdp) {
    // HSDP's gradient all-reduce over the replicas of a shard position, fsdp ranks apart: those
    // of one node share it only when a shard group is smaller than the node.
    const int replicas = world / l.fsdp;
    out.push_back({"dp_replicate", replicas, l.fsdp >= gpn ? 1 : std::min(replicas, gpn / l.fsdp),
                   true, false});
  }
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

double pinned_block_bytes(double bytes) {
  if (bytes <= 1) return 1;
  return std::exp2(std::ceil(std::log2(bytes)));
}

TimelineInputs step_timeline_inputs(const Prediction& p, RuntimeKind runtime, const Topology& topo,
                                    const PlanOptions& o, int peak_rank) {
  const PytorchRuntime& rt = topo.pytorch;
  TimelineInputs in;
  in.step_transient = p.gpu_transient_bytes;
  in.cublas_workspace_bytes = term_value(p.gpu_runtime_bytes, "cublas_workspace");
  // The trainer's offload under either runtime: prime-rl's copies on the compute stream keep
  // only the layer input in use (ac_layers.h); else the config's max_inflight_activations when
  // it sets it, or the topology's default.
  in.ac_offload_inflight = o.workload && offload_copies_on_compute_stream(*o.workload) ? 1
                           : o.workload && o.workload->ac_max_inflight > 0
                               ? int(o.workload->ac_max_inflight)
                               : rt.ac_offload_inflight_layers;
  const bool torch = runtime == RuntimeKind::pytorch;
  // The fitted stand-in for PyTorch autograd's unlisted temporaries, and torch's foreach AdamW:
  // the pytorch runtime's; the muonplan executor's optimizer step is its step buffers alone.
  in.backward_temporaries_fraction = torch ? rt.backward_temporaries_fraction : 0;
  in.adamw_foreach_temporaries = torch;
  in.peak_rank = peak_rank;
  if (o.workload)
    in.attention =
        resolved_attention_kernel(o.workload->attention, topo.node.gpu.compute_capability);
  return in;
}

AllocatorConfig step_allocator_config(const Prediction& p, const PlanOptions& o,
                                      const PytorchRuntime& rt) {
  AllocatorConfig cfg;
  cfg.expandable_segments = o.expandable_segments.value_or(rt.expandable_segments);
  cfg.round_bytes = int64_t(rt.allocator_round_bytes);
  // The allocator may reserve what the device has beside the memory outside it; past that it
  // frees its unused cached segments and retries, as the source does before raising OOM.
  cfg.capacity = int64_t(std::max(0.0, p.gpu_limit_bytes - sum(p.gpu_fixed_bytes)));
  return cfg;
}

void add_muonplan_timeline_terms(const ModelSpec& spec, const ParamInventory& inv,
                                 const CandidateContext& cc, const ChunkPlan& plan, int peak_rank,
                                 Prediction& p) {
  const TimelineInputs in =
      step_timeline_inputs(p, RuntimeKind::muonplan, cc.topo, cc.o, peak_rank);
  // Without a workload one step: its optimizer step holds the state it has just created beside
  // the gradients and the buffers, all that a later step's holds (and no allocator's cache for
  // a second step to find).
  const int steps = cc.o.workload ? 2 : 1;
  set_allocated_terms(live_peak(build_step_timeline(spec, inv, cc.o, plan, in, steps)), in, p);
}

void add_pytorch_runtime_terms(const ModelSpec& spec, const ParamInventory& inv,
                               const CandidateContext& cc, const ChunkPlan& plan, int peak_rank,
                               bool replay, Prediction& p) {
  add_gpu_terms(cc, plan, p);
  if (replay) add_simulated_terms(spec, inv, cc.topo, cc.o, plan, peak_rank, p);
  add_host_terms(spec, inv, cc, plan, p);
}

namespace {

// Outside the allocator: the CUDA context and the NCCL buffers of every communicator.
void add_outside_terms(const CandidateContext& cc, const ChunkPlan& plan, Prediction& p) {
  const Topology& topo = cc.topo;
  const PlanOptions& o = cc.o;
  const PytorchRuntime& rt = topo.pytorch;
  const int world = plan.world;
  const int gpn = cc.gpus_per_node;
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

void add_gpu_terms(const CandidateContext& cc, const ChunkPlan& plan, Prediction& p) {
  const PytorchRuntime& rt = cc.topo.pytorch;
  add_outside_terms(cc, plan, p);
  p.gpu_runtime_bytes.push_back({"cublas_workspace",
                                 rt.cublas_workspace_mib * kMiB * rt.gemm_streams,
                                 std::to_string(rt.gemm_streams) + " GEMM stream(s) x " +
                                     mib(rt.cublas_workspace_mib * kMiB)});
}

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / kGiB);
  return buf;
}

// The GPU allocated terms from a timeline's peak: the tensors live there by kind (their requested
// bytes), each in its list (timeline_term_list); what the lists held before goes. An optimizer
// step buffer is one tensor of the timeline: its formula is the input term's (which chunks'
// buffers it holds, cost_model.cc), after where the peak fell.
void set_allocated_terms(const TimelinePeak& peak, const TimelineInputs& in, Prediction& p) {
  // In TimelineTermList's order.
  std::vector<Term>* lists[] = {&p.gpu_persistent_bytes, &p.gpu_transient_bytes,
                                &p.gpu_runtime_bytes, &p.gpu_workload_bytes};
  for (std::vector<Term>* list : lists) list->clear();
  for (Term t : peak.requested) {
    for (const Term& input : in.step_transient) {
      if (input.name == t.name) t.formula = "at " + peak.where + ": " + input.formula;
    }
    lists[int(timeline_term_list(t.name, in))]->push_back(std::move(t));
  }
}

// The step's allocations replayed through the caching-allocator model (step_timeline.h). The
// GPU allocated terms become the tensors live at the replay's allocated peak, by kind (their
// requested bytes), and the blocks' rounding: they sum to the simulated max_memory_allocated.
// The closed-form terms computed before (cost_model.cc) go; the optimizer step's buffers among
// them are the timeline's input (step_timeline_inputs). The reserve is the
// replay's reserved peak less its allocated peak.
void add_simulated_terms(const ModelSpec& spec, const ParamInventory& inv, const Topology& topo,
                         const PlanOptions& o, const ChunkPlan& plan, int peak_rank,
                         Prediction& p) {
  const TimelineInputs in = step_timeline_inputs(p, RuntimeKind::pytorch, topo, o, peak_rank);
  const AllocatorConfig cfg = step_allocator_config(p, o, topo.pytorch);
  const TimelineReplay r = replay_timeline(build_step_timeline(spec, inv, o, plan, in), cfg);
  const double allocated = double(r.allocated.bytes), reserved = double(r.reserved.bytes);
  set_allocated_terms(r.allocated, in, p);
  p.gpu_runtime_bytes.push_back(
      {"allocator_block_rounding", double(r.allocated.rounding),
       "at " + r.allocated.where +
           ": the live blocks' bytes past their requests (512 B rounding, and what a block "
           "keeps unsplit: caching_allocator.h)"});
  std::string pools;
  for (const auto& [stream, bytes] : r.reserved_by_stream) {
    if (bytes > 0)
      pools +=
          std::string(pools.empty() ? "" : ", ") + stream_name(stream) + " " + gib(double(bytes));
  }
  p.gpu_reserve_bytes.push_back(
      {"allocator_simulated_reserve", reserved - allocated,
       std::string(cfg.expandable_segments ? "expandable segments; " : "") +
           "simulated max_memory_reserved " + gib(reserved) + " (reached at " + r.reserved.where +
           "; segments by stream: " + pools + ") less max_memory_allocated " + gib(allocated) +
           (r.out_of_memory ? "; the allocator ran out of memory" : "")});
  p.gpu_allocated_peak_at = r.allocated.where;
  p.gpu_reserved_peak_at = r.reserved.where;
  p.gpu_live_at_peak_bytes = r.allocated.live;
  p.allocator_replayed = true;
}

void add_host_terms(const ModelSpec& spec, const ParamInventory& inv, const CandidateContext& cc,
                    const ChunkPlan& plan, Prediction& p) {
  const PlanOptions& o = cc.o;
  const PytorchRuntime& rt = cc.topo.pytorch;
  const int world = plan.world;
  const int gpn = cc.gpus_per_node;
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
        for (double b : host_state_arrays(cc, t.rule == UpdateRule::muon))
          pinned_extra += pinned_block_bytes(n * b) - n * b;
      }
    }
  }
  for (double b : ac_offload_host_buffers(spec, o))
    pinned_extra += gpn * (pinned_block_bytes(b) - b);
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
