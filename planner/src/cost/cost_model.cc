// Memory, host RAM, traffic and optimizer-step time of one candidate (docs/planner.md).
#include "muonplan/cost_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "cost/gpu_persistent.h"
#include "cost/runtime_memory.h"
#include "cost/workload_cost.h"
#include "muonplan/layout.h"
#include "muonplan/ns_model.h"
#include "muonplan/ns_workspace.h"
#include "muonplan/offload_policy.h"
#include "muonplan/owners.h"
#include "muonplan/stage_names.h"
#include "muonplan/units.h"

namespace muonplan {

namespace {

// Elements each world rank holds, by update rule.
struct LocalElems {
  std::vector<double> muon, adamw;
  double all(int r) const { return muon[r] + adamw[r]; }
};

// Tensors whose placements split alike (row-sharded ones with the same row count, expert
// stacks with the same entry count) are summed first, then spread over the ranks once per
// kind: the cost is tensors plus ranks x distinct shapes, not tensors x ranks.
LocalElems count_local(const ParamInventory& inv, const PlanOptions& o, int world) {
  LocalElems e{std::vector<double>(world, 0), std::vector<double>(world, 0)};
  const Layout& layout = o.layout;
  // [muon?][row count or entry count] -> elements per row or per entry, summed over tensors.
  std::map<int64_t, double> rows[2], stacks[2];
  for (const ParamTensor& t : inv.tensors) {
    if (t.mtp && !o.include_mtp) continue;
    const int muon = t.rule == UpdateRule::muon;
    const double per_entry = double(t.numel()) / double(t.shape[0]);
    (t.stack_dim == 0 ? stacks : rows)[muon][t.shape[0]] += per_entry;
  }
  for (int muon = 0; muon < 2; ++muon) {
    std::vector<double>& dst = muon ? e.muon : e.adamw;
    std::vector<double> pos(layout.fsdp, 0);  // per group position (replicas hold alike)
    for (const auto& [n, w] : rows[muon]) {
      for (int i = 0; i < layout.fsdp; ++i)
        pos[i] += double(chunk_range(n, layout.fsdp, i).size()) * w;
    }
    for (int r = 0; r < world; ++r) dst[r] += pos[r % layout.fsdp];
    for (const auto& [n, w] : stacks[muon]) {
      const LocalCounts rule{true, n, layout.ep, world / layout.ep};
      for (int r = 0; r < world; ++r) dst[r] += double(rule.at(r)) * w;
    }
  }
  return e;
}

// Rates the time model uses, from the topology and its calibration.
struct Rates {
  double hbm_bps, cpu_bps_per_rank, h2d_bps, d2h_bps, intra_bps, inter_bps;
  double intra_latency_s, inter_latency_s;
  double collective_s;  // fixed cost per all-to-all (calibration)
};

Rates rates(const Topology& topo, const PlanOptions& o, int gpus_per_node) {
  const Calibration& c = topo.calibration;
  const NodeSpec& n = topo.node;
  Rates r{};
  r.hbm_bps = n.gpu.hbm_gbps * kGB * c.hbm_efficiency;
  r.collective_s = c.collective_us * 1e-6;
  // Each rank runs on its GPU's socket: a socket's share of the bandwidth over its ranks.
  const int sockets = std::max(1, std::min(n.cpu_sockets, gpus_per_node));
  const int ranks_per_socket = (gpus_per_node + sockets - 1) / sockets;
  const double host_eff = o.runtime == RuntimeKind::pytorch ? topo.pytorch.host_pass_efficiency
                                                            : c.host_kernel_efficiency;
  r.cpu_bps_per_rank = n.host_mem_gbps / sockets * kGB * host_eff / ranks_per_socket;
  // Staged optimizer state crosses PCIe through pageable memory unless asked pinned.
  const bool pageable =
      offload_policy(o.offload, o.optimizer_staging).staging != OffloadStaging::none &&
      !o.pinned_host_state;
  r.h2d_bps = (pageable ? n.pcie_pageable_gbps : n.pcie_h2d_gbps) * kGB * c.pcie_efficiency;
  r.d2h_bps = (pageable ? n.pcie_pageable_gbps : n.pcie_d2h_gbps) * kGB * c.pcie_efficiency;
  Topology t = topo;
  t.max_nodes = std::max(2, t.max_nodes);  // two nodes suffice to route inter-node traffic
  t.node.gpus = gpus_per_node;
  t.node.gpus_per_pcie_switch = std::min(n.gpus_per_pcie_switch, gpus_per_node);
  if (gpus_per_node % t.node.gpus_per_pcie_switch != 0) t.node.gpus_per_pcie_switch = 1;
  const TopologyGraph g(t, 2);
  if (gpus_per_node > 1) {
    const Route in = g.route(g.gpu(0, 0), g.gpu(0, 1));
    r.intra_bps = in.bottleneck_gbps * kGB * c.link_efficiency;
    r.intra_latency_s = in.latency_us * 1e-6;
  }
  const Route out = g.route(g.gpu(0, 0), g.gpu(1, 0));
  // A NIC shared by several GPUs splits its bandwidth among them.
  const double nic_share = n.nics >= gpus_per_node ? 1.0 : double(n.nics) / gpus_per_node;
  r.inter_bps = std::min(out.bottleneck_gbps, n.nic_gbps * nic_share) * kGB * c.link_efficiency;
  r.inter_latency_s = out.latency_us * 1e-6;
  return r;
}

// Per group position: elements of the batch it holds, and the seconds of each exchange; and
// its buffers as the step allocates them (executor/src/step.cc, start_batch): `buffer_elems`
// of its slices (padding matrices' zero slices too: they travel), whether it owns a matrix (a
// gathered copy and an NS workspace; padding owners too), and its largest slice of a real
// matrix (a `chunked` staging piece).
struct BatchTraffic {
  std::vector<double> held_elems;
  double exchange_s = 0;  // one exchange (the return exchange moves the same bytes back)
  std::vector<double> buffer_elems, largest_slice;
  std::vector<char> owns;
};

BatchTraffic batch_traffic(const ParamInventory& inv, const Chunk& c, const Rates& rt,
                           int gpus_per_node) {
  BatchTraffic bt;
  const int g = c.group_size;
  bt.held_elems.assign(g, 0);
  bt.buffer_elems.assign(g, 0);
  bt.largest_slice.assign(g, 0);
  bt.owns.assign(g, 0);
  // Exchange 1 bytes per rank, split by link; exchange 2 is its mirror image (send <-> recv).
  // Only the ranks holding a slice of a matrix are visited (detail::holders).
  std::vector<double> send_in(g, 0), send_out(g, 0), recv_in(g, 0), recv_out(g, 0);
  for (size_t k = 0; k < c.owners.size(); ++k) {
    const MatrixRef& m = c.matrices[std::min(k, c.matrices.size() - 1)];
    const int owner = c.owners[k];
    bt.owns[owner] = 1;
    const Range h = detail::holders(inv, m, g);
    for (int64_t rr = h.begin; rr < h.end; ++rr) {
      const int r = int(rr);
      const double b = detail::slice_bytes(inv, m, g, r);
      bt.buffer_elems[r] += b / 2;
      if (k < c.matrices.size()) {
        bt.held_elems[r] += b / 2;
        bt.largest_slice[r] = std::max(bt.largest_slice[r], b / 2);
      }
      if (r == owner) continue;
      const bool same_node = r / gpus_per_node == owner / gpus_per_node;
      (same_node ? send_in : send_out)[r] += b;
      (same_node ? recv_in : recv_out)[owner] += b;
    }
  }
  bool any_inter = false;
  for (int r = 0; r < g; ++r) {
    // Links are full duplex: a rank's time is its busier direction on its busier link.
    const double in = std::max(send_in[r], recv_in[r]), out = std::max(send_out[r], recv_out[r]);
    const double t = std::max(rt.intra_bps > 0 ? in / rt.intra_bps : 0.0, out / rt.inter_bps);
    bt.exchange_s = std::max(bt.exchange_s, t);
    any_inter = any_inter || out > 0;
  }
  bt.exchange_s += (any_inter ? rt.inter_latency_s : rt.intra_latency_s) + rt.collective_s;
  return bt;
}

// Per rank, the heaviest window of `depth` consecutive chunks in flight: the bytes they hold
// summed, plus the largest scratch among them (compute runs one chunk at a time). Each rank's
// own sum: the busiest ranks of different chunks are different ranks.
class RankWindows {
 public:
  RankWindows(int world, int depth)
      : world_(world),
        depth_(depth),
        held_(size_t(world) * depth, 0),
        scratch_(size_t(world) * depth, 0),
        sum_(world, 0),
        best_(world, 0) {}
  // held_scratch(r) -> {held, scratch} of the next chunk on rank r.
  template <class F>
  void add(F held_scratch) {
    const size_t slot = n_++ % size_t(depth_);
    for (int r = 0; r < world_; ++r) {
      const auto [h, sc] = held_scratch(r);
      double* held = &held_[size_t(r) * depth_];
      double* scratch = &scratch_[size_t(r) * depth_];
      sum_[r] += h - held[slot];
      held[slot] = h;
      scratch[slot] = sc;
      best_[r] = std::max(best_[r], sum_[r] + *std::max_element(scratch, scratch + depth_));
    }
  }
  double at(int r) const { return best_[r]; }

 private:
  int world_, depth_;
  size_t n_ = 0;
  std::vector<double> held_, scratch_, sum_, best_;
};

// NS scratch of `count` matrices in one call: the executor's workspace (ns_workspace.h).
double ns_scratch_bytes(int64_t count, int64_t rows, int64_t cols) {
  return double(ns_workspace_layout(count, rows, cols).total);
}

}  // namespace

Prediction predict(const ModelSpec& spec, const ParamInventory& inv, const Topology& topo,
                   const PlanOptions& o, const ChunkPlan& plan) {
  Prediction p;
  const int gpn = o.gpus_per_node > 0 ? o.gpus_per_node : topo.node.gpus;
  const int world = plan.world;
  const LocalElems local = count_local(inv, o, world);
  const Rates rt = rates(topo, o, gpn);
  const bool muon = o.optimizer == OptimizerKind::muon;
  // Where each array lives and what moves: the offload policy's table (offload_policy.h).
  const OffloadPolicy& pol = offload_policy(o.offload, o.optimizer_staging);
  const bool host_pipeline = pol.host_fold || pol.host_apply;

  // Busiest rank by persistent bytes (all ranks hold the same kinds of state).
  int rank = 0;
  for (int r = 1; r < world; ++r) {
    if (local.all(r) + local.adamw[r] > local.all(rank) + local.adamw[rank]) rank = r;
  }
  const double all = local.all(rank), mu = local.muon[rank], aw = local.adamw[rank];
  const double state = state_bytes(o, mu, aw);

  // --- GPU persistent bytes of a rank holding `n_all` elements, `n_mu` of them Muon's
  // (`n_aw` AdamW's): gpu_persistent.cc, which the search's lower bound uses as well.
  auto persistent_terms = [&](double n_all, double n_mu, double n_aw) {
    return gpu_persistent_terms(o, pol, n_all, n_mu, n_aw);
  };
  // The terms are linear in the element counts: per-element bytes, to sum a rank's quickly.
  const double per_all = sum(persistent_terms(1, 0, 0)), per_mu = sum(persistent_terms(0, 1, 0)),
               per_aw = sum(persistent_terms(0, 0, 1));

  // --- Per-chunk stages, transient bytes and traffic
  std::vector<std::vector<Stage>> stages;
  // Per rank: bytes each chunk holds while in flight and scratch that lives only during its GPU
  // compute (RankWindows).
  const int depth = o.batches_in_flight();
  RankWindows windows(world, depth);
  const double mom_bytes = muon_state_bytes(o);
  const double adamw_piece_bytes = muon ? adamw_state_bytes() : state_bytes(o, 0, 1);
  const bool chunked = pol.staging == OffloadStaging::chunked;
  std::vector<double> adamw_piece;  // `chunked`: per rank, its largest AdamW tensor's elements
  if (chunked) {
    adamw_piece.assign(world, 0);
    for (const ParamTensor& t : inv.tensors) {
      if (t.rule != UpdateRule::adamw || (t.mtp && !o.include_mtp)) continue;
      const ShardRule sr = shard_rule(t, o.layout, world);
      const double per_entry = double(t.numel() / t.shape[0]);
      for (int r = 0; r < world; ++r)
        adamw_piece[r] =
            std::max(adamw_piece[r], double(sr.range(t.shape[0], r).size()) * per_entry);
    }
  }
  double alltoall_s_total = 0;
  const double mom_b = o.bf16_momentum ? 2 : 4;
  // GPU momentum fold: read G (4), read+write M, with Nesterov write+read U (fp32), write the
  // bf16 copy that is exchanged (2).
  const double momentum_bpe = 4 + 2 * mom_b + (o.nesterov ? 8 : 0) + 2;
  const double update_bpe = 4 + 2 + 4;        // read W, read bf16 update, write W (decay folded in)
  const double adamw_bpe = 28;                // read p, g, m, v; write p, m, v (fp32)
  const double cpu_fold_bpe = 4 + 2 * mom_b;  // host: read G, read+write M
  const HostPasses passes = host_passes(o);   // host apply bytes per element, by runtime
  const double cpu_adamw_bpe = 30;
  for (const Chunk& c : plan.chunks) {
    std::vector<Stage> st;
    const BatchTraffic bt =
        c.kind == Chunk::Kind::muon_batch ? batch_traffic(inv, c, rt, gpn) : BatchTraffic{};
    double elems = 0;        // this chunk's elements on the busiest rank
    double state_elems = 0;  // bytes of optimizer state for the chunk on that rank
    if (c.kind == Chunk::Kind::adamw_group) {
      elems = aw;
      state_elems = muon ? aw * adamw_state_bytes() : state_bytes(o, 0, aw);
      if (pol.host_adamw) {
        st.push_back(
            {Resource::pcie_d2h, 2 * elems / rt.d2h_bps, stage::kGradsD2H, StagePhase::backward});
        st.push_back({Resource::cpu, elems * cpu_adamw_bpe / rt.cpu_bps_per_rank, stage::kCpuAdamw,
                      StagePhase::backward});
        st.push_back({Resource::pcie_h2d, 2 * elems / rt.h2d_bps, stage::kWeightsH2D,
                      StagePhase::weight_upload});
      } else {
        const double bpe = o.optimizer == OptimizerKind::signsgd ? 14 : adamw_bpe;
        st.push_back({Resource::gpu, elems * bpe / rt.hbm_bps, stage::kAdamwKernel});
      }
    } else {
      double ns_s = 0, exch_s = 0;
      if (c.kind == Chunk::Kind::muon_batch) {
        elems = *std::max_element(bt.held_elems.begin(), bt.held_elems.end());
        ns_s = ns_cost(topo, 1, c.rows, c.cols, o.schedule).total_s;
        exch_s = bt.exchange_s;
      } else {
        const int64_t count = c.local.max();
        elems = double(count) * c.rows * c.cols;
        ns_s = count > 0 ? ns_cost(topo, count, c.rows, c.cols, o.schedule).total_s : 0;
      }
      state_elems = elems * muon_state_bytes(o);
      alltoall_s_total += 2 * exch_s;
      if (pol.host_fold) {
        st.push_back(
            {Resource::pcie_d2h, 2 * elems / rt.d2h_bps, stage::kGradsD2H, StagePhase::backward});
        st.push_back({Resource::cpu, elems * cpu_fold_bpe / rt.cpu_bps_per_rank, stage::kCpuFold,
                      StagePhase::backward});
        // A PyTorch trainer casts the fp32 momentum to bf16 in its own host pass after backward.
        if (passes.momentum_cast_bpe > 0)
          st.push_back({Resource::cpu, elems * passes.momentum_cast_bpe / rt.cpu_bps_per_rank,
                        stage::kCpuMomentumCast});
        st.push_back({Resource::pcie_h2d, 2 * elems / rt.h2d_bps, stage::kMomentumH2D});
      } else {
        st.push_back({Resource::gpu, elems * momentum_bpe / rt.hbm_bps, stage::kMomentum});
      }
      if (exch_s > 0) st.push_back({Resource::network, exch_s, stage::kToOwners});
      st.push_back({Resource::gpu, ns_s, stage::kNewtonSchulz});
      if (exch_s > 0) st.push_back({Resource::network, exch_s, stage::kBack});
      if (pol.host_apply) {
        st.push_back({Resource::pcie_d2h, 2 * elems / rt.d2h_bps, stage::kUpdateD2H});
        st.push_back(
            {Resource::cpu, elems * passes.apply_bpe / rt.cpu_bps_per_rank, stage::kCpuApply});
        if (passes.weight_cast_bpe > 0)
          st.push_back({Resource::cpu, elems * passes.weight_cast_bpe / rt.cpu_bps_per_rank,
                        stage::kCpuWeightCast});
        st.push_back({Resource::pcie_h2d, 2 * elems / rt.h2d_bps, stage::kWeightsH2D});
      } else {
        st.push_back({Resource::gpu, elems * update_bpe / rt.hbm_bps, stage::kUpdate});
      }
    }
    if (chunked) {
      st.insert(st.begin(), {Resource::pcie_h2d, state_elems / rt.h2d_bps, stage::kStateH2D});
      st.push_back({Resource::pcie_d2h, state_elems / rt.d2h_bps, stage::kStateD2H});
    }
    stages.push_back(std::move(st));
    // The chunk's buffers on each rank, into that rank's windows. A batch: send and receive
    // buffers of both exchanges (bf16) and, on owners, the gathered matrix, held while in
    // flight; the NS workspace on owners only during NS. Local work needs no exchange: its bf16
    // copies, workspace and look-ahead live only while it computes. `chunked` staging brings
    // state one piece at a time (a rank's slice of a batch matrix, a local entry, an AdamW
    // tensor), written back before the next: scratch too.
    const double mat = double(c.rows) * double(c.cols);
    if (c.kind == Chunk::Kind::muon_batch) {
      const double ws = ns_scratch_bytes(1, c.rows, c.cols);
      const int g = c.group_size;
      windows.add([&](int r) {
        const int pos = r % g;
        const double held = bt.buffer_elems[pos];
        double h = 2 * 2 * held + (bt.owns[pos] ? 2 * mat : 0) + (o.nesterov ? 4 * held : 0);
        double sc = bt.owns[pos] ? ws : 0;
        if (chunked) sc = std::max(sc, bt.largest_slice[pos] * mom_bytes);
        return std::make_pair(h, sc);
      });
    } else if (c.kind == Chunk::Kind::muon_local) {
      windows.add([&](int r) {
        const int64_t n = c.local.at(r);
        double sc = 2.0 * double(n) * mat + ns_scratch_bytes(n, c.rows, c.cols) +
                    (o.nesterov ? 4.0 * double(n) * mat : 0);
        if (chunked && n > 0) sc = std::max(sc, mat * mom_bytes);
        return std::make_pair(0.0, sc);
      });
    } else {
      windows.add([&](int r) {
        return std::make_pair(0.0, chunked ? adamw_piece[r] * adamw_piece_bytes : 0.0);
      });
    }
  }

  // --- The rank whose allocations peak highest: persistent plus transient, its own (ties: the
  // larger transient, then the lower rank). Its terms are the prediction's.
  const double check_bytes = 4.0 * double(plan.chunks.size() + inv.tensors.size());
  auto staged = [&](int r) {
    return pol.staging == OffloadStaging::whole ? state_bytes(o, local.muon[r], local.adamw[r]) : 0;
  };
  int peak_rank = 0;
  double best_peak = -1, best_transient = -1;
  for (int r = 0; r < world; ++r) {
    const double tr = windows.at(r) + check_bytes + staged(r);
    const double pk =
        per_all * local.all(r) + per_mu * local.muon[r] + per_aw * local.adamw[r] + tr;
    if (pk > best_peak || (pk == best_peak && tr > best_transient)) {
      peak_rank = r;
      best_peak = pk;
      best_transient = tr;
    }
  }
  p.gpu_persistent_bytes =
      persistent_terms(local.all(peak_rank), local.muon[peak_rank], local.adamw[peak_rank]);
  p.gpu_transient_bytes.push_back(
      {"step_buffers", windows.at(peak_rank),
       "on the peak rank (" + std::to_string(peak_rank) + "): max over " + std::to_string(depth) +
           " consecutive chunks in flight of their exchange buffers and gathered matrices, "
           "plus the largest NS scratch" +
           std::string(chunked ? " or staged state piece" : "") + " among them" +
           (o.nesterov ? ", Nesterov look-ahead" : "")});
  // The step's non-finite check (docs/muon-step.md section 6) sums each chunk's update and each
  // tensor's AdamW weights into one fp32 on the device and reads them all back at the end.
  p.gpu_transient_bytes.push_back(
      {"nonfinite_check", check_bytes,
       "one fp32 sum per chunk and per tensor (AdamW weights), read back after the step"});
  if (pol.staging == OffloadStaging::whole) {
    p.gpu_transient_bytes.push_back({"staged_optimizer_state", staged(peak_rank),
                                     "whole optimizer state of the rank, on GPU for the step"});
  }

  // --- Fixed overheads
  const double allocated = sum(p.gpu_persistent_bytes) + sum(p.gpu_transient_bytes);
  p.gpu_fixed_bytes.push_back(
      {"cuda_context", topo.overheads.cuda_context_gib * kGiB, "per GPU, outside the allocator"});
  p.gpu_fixed_bytes.push_back({"allocator_slack",
                               allocated * topo.overheads.allocator_slack_fraction,
                               "fragmentation reserve on allocated bytes"});

  // --- Host RAM per node: the busiest node.
  double node_all = 0, node_mu = 0, node_aw = 0;
  for (int n = 0; n * gpn < world; ++n) {
    double a = 0, m = 0, w = 0;
    for (int r = n * gpn; r < (n + 1) * gpn && r < world; ++r) {
      a += local.all(r);
      m += local.muon[r];
      w += local.adamw[r];
    }
    if (a > node_all) {
      node_all = a;
      node_mu = m;
      node_aw = w;
    }
  }
  if (pol.master == Residence::host) {
    p.host_bytes_per_node.push_back({"fp32_master", 4 * node_all, "4 B x params on the node"});
    p.host_bytes_per_node.push_back(
        {"fp32_grad_accumulator", 4 * node_all, "4 B x params on the node"});
  }
  // The table keeps momentum and moments together (a mode offloads the optimizer's state).
  if (pol.muon_momentum == Residence::host) {
    p.host_bytes_per_node.push_back({"optimizer_state", state_bytes(o, node_mu, node_aw),
                                     "momentum (Muon) and moments (AdamW) on the node"});
  }
  if (host_pipeline) {
    // Pinned staging for the batches in flight: bf16 momentum, update and weights per batch.
    double pinned = 0;
    for (const Chunk& c : plan.chunks) {
      if (c.kind != Chunk::Kind::adamw_group) {
        pinned = std::max(pinned, 3 * 2.0 * double(c.params) / std::max(1, c.group_size));
      }
    }
    p.host_bytes_per_node.push_back({"pinned_staging", pinned * depth * gpn,
                                     "bf16 momentum, update and weights of the batches in flight"});
  }
  p.host_bytes_per_node.push_back({"process_overhead",
                                   topo.overheads.host_per_process_gib * kGiB * gpn,
                                   "runtime and libraries per rank"});

  // --- Traffic per GPU
  p.alltoall_bytes_per_rank_max = plan.loads.max_bytes();
  p.comm_bytes.push_back({"alltoall_sent", p.alltoall_bytes_per_rank_max,
                          "bytes the busiest rank sends in both exchanges"});
  if (pol.staging != OffloadStaging::none) p.h2d_bytes_per_gpu = p.d2h_bytes_per_gpu = state;
  if (pol.host_fold) {
    p.d2h_bytes_per_gpu += 2 * all;  // bf16 grads (the host folds Muon's, AdamW updates its own)
    p.h2d_bytes_per_gpu += 2 * mu;   // bf16 momentum, the NS input
  }
  if (pol.host_apply) {
    p.d2h_bytes_per_gpu += 2 * mu;   // bf16 update
    p.h2d_bytes_per_gpu += 2 * all;  // new bf16 weights
  }
  p.comm_bytes.push_back({"h2d", p.h2d_bytes_per_gpu, "host to GPU per step"});
  p.comm_bytes.push_back({"d2h", p.d2h_bytes_per_gpu, "GPU to host per step"});

  // --- Optimizer-step time
  const PipelineResult pr = simulate_pipeline(stages, depth);
  double staged_s = 0;
  if (pol.staging == OffloadStaging::whole) {
    p.step_phases_s.push_back({"state_h2d", state / rt.h2d_bps, "whole state to GPU before"});
    p.step_phases_s.push_back({"state_d2h", state / rt.d2h_bps, "whole state back after"});
    staged_s = state / rt.h2d_bps + state / rt.d2h_bps;
  }
  const char* names[] = {"gpu_busy", "network_busy", "pcie_h2d_busy", "pcie_d2h_busy", "cpu_busy"};
  double busy_total = 0;
  for (int r = 0; r < 5; ++r) {
    busy_total += pr.busy_s[r];
    if (pr.busy_s[r] > 0) p.step_phases_s.push_back({names[r], pr.busy_s[r], "sum of stages"});
  }
  p.step_phases_s.push_back(
      {"pipelined_chunks", pr.makespan_s, std::to_string(depth) + " chunks in flight"});
  p.step_phases_s.push_back(
      {"overlapped", busy_total - pr.makespan_s, "stage time hidden behind other resources"});
  p.optimizer_step_s = staged_s + pr.makespan_s;
  // The schedule a trace draws: under whole staging the state upload comes first (chunk -1:
  // no chunk's) and its download last.
  const double upload_s = staged_s > 0 ? state / rt.h2d_bps : 0;
  if (staged_s > 0)
    p.schedule.push_back({-1, 0, Resource::pcie_h2d, stage::kStateH2D, 0, upload_s});
  for (StageSpan sp : pr.spans) {
    sp.start_s += upload_s;
    sp.end_s += upload_s;
    p.schedule.push_back(std::move(sp));
  }
  if (staged_s > 0) {
    p.schedule.push_back({-1, 0, Resource::pcie_d2h, stage::kStateD2H, upload_s + pr.makespan_s,
                          p.optimizer_step_s});
  }
  (void)alltoall_s_total;

  // --- Limits
  p.gpu_limit_bytes = (o.gpu_memory_gib > 0 ? o.gpu_memory_gib : topo.node.gpu.memory_gib) * kGiB;
  p.host_limit_bytes = (o.host_ram_gib > 0 ? o.host_ram_gib : topo.node.host_ram_gib) * kGiB;

  if (o.workload) {
    OptimizerPhases phases;
    if (host_pipeline) {
      // In a training step the backward-phase stages run during backward (workload_cost.cc);
      // the rest, pipelined as in the optimizer step, waits for backward to end.
      std::vector<std::vector<Stage>> post;
      for (const std::vector<Stage>& chunk : stages) {
        std::vector<Stage> kept;
        for (const Stage& s : chunk) {
          if (s.phase == StagePhase::optimizer) kept.push_back(s);
        }
        if (!kept.empty()) post.push_back(std::move(kept));
      }
      const PipelineResult post_run = simulate_pipeline(post, depth);
      phases.post_backward_s = post_run.makespan_s;
      phases.post_backward_bound = bounding_resource(post_run);
    }
    phases.host_update_elems = aw;
    phases.muon_elems = mu;
    phases.all_elems = all;
    phases.cpu_bps_per_rank = rt.cpu_bps_per_rank;
    phases.d2h_bps = rt.d2h_bps;
    phases.h2d_bps = rt.h2d_bps;
    add_workload_terms(spec, inv, topo, o, plan, phases, p);
  }
  p.gpu_headroom = o.gpu_headroom_or();
  p.host_headroom = o.host_headroom_or();
  if (o.runtime == RuntimeKind::pytorch)
    add_pytorch_runtime_terms(spec, inv, topo, o, plan, peak_rank, p);
  return p;
}

}  // namespace muonplan
