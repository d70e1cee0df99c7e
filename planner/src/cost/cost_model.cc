// Memory, host RAM, traffic and optimizer-step time of one candidate (docs/planner.md).
#include "muonplan/cost_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "cost/runtime_memory.h"
#include "cost/step_traffic.h"
#include "cost/workload_cost.h"
#include "muonplan/layout.h"
#include "muonplan/ns_model.h"
#include "muonplan/ns_workspace.h"
#include "muonplan/offload_policy.h"
#include "muonplan/owners.h"
#include "muonplan/stage_names.h"
#include "muonplan/units.h"

namespace muonplan {

using step_cost::batch_traffic;
using step_cost::BatchTraffic;
using step_cost::Rates;
using step_cost::rates;

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

// Optimizer-state bytes per element (docs/muon-step.md section 5).
double muon_state_bytes(const PlanOptions& o) {
  return o.bf16_momentum ? 2 : 4;
}
double adamw_state_bytes() {
  return 8;
}

double state_bytes(const PlanOptions& o, double muon_elems, double adamw_elems) {
  if (o.optimizer == OptimizerKind::signsgd) return 0;
  return muon_elems * muon_state_bytes(o) + adamw_elems * adamw_state_bytes();
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

// The figures every part of a prediction reads, computed once per candidate.
struct StepFigures {
  const PlanOptions& o;
  // Where each array lives and what moves: the offload policy's table (offload_policy.h).
  const OffloadPolicy& pol;
  int gpn, world, depth;  // GPUs per node, ranks, chunks in flight
  LocalElems local;
  Rates rt;
  HostPasses passes;  // host apply bytes per element, by runtime
  bool muon, chunked, host_pipeline;
  // The busiest rank by persistent bytes: its elements (all, Muon's, AdamW's) and state bytes.
  double all, mu, aw, state;
};

StepFigures step_figures(const ParamInventory& inv, const Topology& topo, const PlanOptions& o,
                         const ChunkPlan& plan) {
  const int gpn = o.gpus_per_node > 0 ? o.gpus_per_node : topo.node.gpus;
  const int world = plan.world;
  const OffloadPolicy& pol = offload_policy(o.offload, o.optimizer_staging);
  StepFigures f{o,
                pol,
                gpn,
                world,
                o.batches_in_flight(),
                count_local(inv, o, world),
                rates(topo, o, gpn),
                host_passes(o),
                o.optimizer == OptimizerKind::muon,
                pol.staging == StateStaging::per_chunk,
                pol.host_fold || pol.host_apply,
                0,
                0,
                0,
                0};
  // Busiest rank by persistent bytes (all ranks hold the same kinds of state).
  const LocalElems& local = f.local;
  int rank = 0;
  for (int r = 1; r < world; ++r) {
    if (local.all(r) + local.adamw[r] > local.all(rank) + local.adamw[rank]) rank = r;
  }
  f.all = local.all(rank);
  f.mu = local.muon[rank];
  f.aw = local.adamw[rank];
  f.state = state_bytes(o, f.mu, f.aw);
  return f;
}

// GPU persistent bytes of a rank holding `n_all` elements, `n_mu` of them Muon's (`n_aw`
// AdamW's).
std::vector<Term> persistent_terms(const StepFigures& f, double n_all, double n_mu, double n_aw) {
  const PlanOptions& o = f.o;
  const OffloadPolicy& pol = f.pol;
  std::vector<Term> t;
  if (pol.bf16_compute_copy) {
    t.push_back({"params_bf16", 2 * n_all, "2 B x local params (compute copy)"});
    // In a training step each unit's gradients leave during backward (workload_cost.cc
    // counts the units in flight); the optimizer step alone holds them until its chunks copy
    // them.
    if (!o.workload)
      t.push_back({"grads_bf16", 2 * n_all, "2 B x local params, until copied to host"});
  }
  if (pol.master == Residence::gpu) {
    t.push_back({"params_fp32", 4 * n_all, "4 B x local params (FSDP master)"});
    t.push_back({"grads_fp32", 4 * n_all, "4 B x local params"});
  }
  if (o.optimizer == OptimizerKind::muon) {
    if (pol.muon_momentum == Residence::gpu) {
      t.push_back({"muon_momentum", n_mu * muon_state_bytes(o),
                   std::to_string(int(muon_state_bytes(o))) + " B x local Muon params"});
    }
    if (pol.adamw_moments == Residence::gpu)
      t.push_back({"adamw_moments", n_aw * adamw_state_bytes(), "8 B x local AdamW params"});
  } else if (o.optimizer == OptimizerKind::adamw && pol.adamw_moments == Residence::gpu) {
    t.push_back({"adamw_moments", state_bytes(o, n_mu, n_aw), "8 B x local params"});
  }
  return t;
}

// `chunked` staging: per rank, its largest AdamW tensor's elements (the piece staged at once).
std::vector<double> largest_adamw_piece(const ParamInventory& inv, const StepFigures& f) {
  std::vector<double> adamw_piece(f.world, 0);
  for (const ParamTensor& t : inv.tensors) {
    if (t.rule != UpdateRule::adamw || (t.mtp && !f.o.include_mtp)) continue;
    const ShardRule sr = shard_rule(t, f.o.layout, f.world);
    const double per_entry = double(t.numel() / t.shape[0]);
    for (int r = 0; r < f.world; ++r)
      adamw_piece[r] = std::max(adamw_piece[r], double(sr.range(t.shape[0], r).size()) * per_entry);
  }
  return adamw_piece;
}

// An AdamW group's stages on the busiest rank, `elems` of its elements there.
std::vector<Stage> adamw_stages(const StepFigures& f, double elems) {
  const Rates& rt = f.rt;
  const double adamw_bpe = 28;  // read p, g, m, v; write p, m, v (fp32)
  const double cpu_adamw_bpe = 30;
  std::vector<Stage> st;
  if (f.pol.host_adamw) {
    st.push_back(
        {Resource::pcie_d2h, 2 * elems / rt.d2h_bps, stage::kGradsD2H, StagePhase::backward});
    st.push_back({Resource::cpu, elems * cpu_adamw_bpe / rt.cpu_bps_per_rank, stage::kCpuAdamw,
                  StagePhase::backward});
    st.push_back({Resource::pcie_h2d, 2 * elems / rt.h2d_bps, stage::kWeightsH2D,
                  StagePhase::weight_upload});
  } else {
    const double bpe = f.o.optimizer == OptimizerKind::signsgd ? 14 : adamw_bpe;
    st.push_back({Resource::gpu, elems * bpe / rt.hbm_bps, stage::kAdamwKernel});
  }
  return st;
}

// A Muon chunk's stages on the busiest rank: `elems` of its elements there, its NS seconds and
// the seconds of one exchange (0: local work, no exchange).
std::vector<Stage> muon_stages(const StepFigures& f, double elems, double ns_s, double exch_s) {
  const PlanOptions& o = f.o;
  const OffloadPolicy& pol = f.pol;
  const Rates& rt = f.rt;
  const HostPasses& passes = f.passes;
  const double mom_b = o.bf16_momentum ? 2 : 4;
  // GPU momentum fold: read G (4), read+write M, with Nesterov write+read U (fp32), write the
  // bf16 copy that is exchanged (2).
  const double momentum_bpe = 4 + 2 * mom_b + (o.nesterov ? 8 : 0) + 2;
  const double update_bpe = 4 + 2 + 4;        // read W, read bf16 update, write W (decay folded in)
  const double cpu_fold_bpe = 4 + 2 * mom_b;  // host: read G, read+write M
  std::vector<Stage> st;
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
    st.push_back({Resource::cpu, elems * passes.apply_bpe / rt.cpu_bps_per_rank, stage::kCpuApply});
    if (passes.weight_cast_bpe > 0)
      st.push_back({Resource::cpu, elems * passes.weight_cast_bpe / rt.cpu_bps_per_rank,
                    stage::kCpuWeightCast});
    st.push_back({Resource::pcie_h2d, 2 * elems / rt.h2d_bps, stage::kWeightsH2D});
  } else {
    st.push_back({Resource::gpu, elems * update_bpe / rt.hbm_bps, stage::kUpdate});
  }
  return st;
}

// One chunk's stages on the busiest rank, `chunked` staging's state transfers around them.
std::vector<Stage> chunk_stages(const Topology& topo, const StepFigures& f, const Chunk& c,
                                const BatchTraffic& bt) {
  const PlanOptions& o = f.o;
  std::vector<Stage> st;
  double elems = 0;        // this chunk's elements on the busiest rank
  double state_elems = 0;  // bytes of optimizer state for the chunk on that rank
  if (c.kind == Chunk::Kind::adamw_group) {
    elems = f.aw;
    state_elems = f.muon ? f.aw * adamw_state_bytes() : state_bytes(o, 0, f.aw);
    st = adamw_stages(f, elems);
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
    st = muon_stages(f, elems, ns_s, exch_s);
  }
  if (f.chunked) {
    st.insert(st.begin(), {Resource::pcie_h2d, state_elems / f.rt.h2d_bps, stage::kStateH2D});
    st.push_back({Resource::pcie_d2h, state_elems / f.rt.d2h_bps, stage::kStateD2H});
  }
  return st;
}

// The chunk's buffers on each rank, into that rank's windows. A batch: send and receive
// buffers of both exchanges (bf16) and, on owners, the gathered matrix, held while in
// flight; the NS workspace on owners only during NS. Local work needs no exchange: its bf16
// copies, workspace and look-ahead live only while it computes. `chunked` staging brings
// state one piece at a time (a rank's slice of a batch matrix, a local entry, an AdamW
// tensor), written back before the next: scratch too.
void add_chunk_buffers(RankWindows& windows, const StepFigures& f, const Chunk& c,
                       const BatchTraffic& bt, const std::vector<double>& adamw_piece) {
  const PlanOptions& o = f.o;
  const bool chunked = f.chunked;
  const double mom_bytes = muon_state_bytes(o);
  const double adamw_piece_bytes = f.muon ? adamw_state_bytes() : state_bytes(o, 0, 1);
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

// Every chunk's stages (the schedule's input) and, per rank, the bytes each chunk holds while
// in flight and scratch that lives only during its GPU compute (RankWindows).
struct ChunkCosts {
  std::vector<std::vector<Stage>> stages;
  RankWindows windows;
};

ChunkCosts chunk_costs(const ParamInventory& inv, const Topology& topo, const StepFigures& f,
                       const ChunkPlan& plan) {
  ChunkCosts cc{{}, RankWindows(f.world, f.depth)};
  const std::vector<double> adamw_piece =
      f.chunked ? largest_adamw_piece(inv, f) : std::vector<double>{};
  for (const Chunk& c : plan.chunks) {
    const BatchTraffic bt =
        c.kind == Chunk::Kind::muon_batch ? batch_traffic(inv, c, f.rt, f.gpn) : BatchTraffic{};
    cc.stages.push_back(chunk_stages(topo, f, c, bt));
    add_chunk_buffers(cc.windows, f, c, bt, adamw_piece);
  }
  return cc;
}

// GPU bytes: the rank whose allocations peak highest, persistent plus transient, its own (ties:
// the larger transient, then the lower rank); its terms are the prediction's, and the fixed
// overheads on them. Returns that rank.
int add_gpu_memory(Prediction& p, const ParamInventory& inv, const Topology& topo,
                   const StepFigures& f, const ChunkPlan& plan, const RankWindows& windows) {
  const PlanOptions& o = f.o;
  const LocalElems& local = f.local;
  // The terms are linear in the element counts: per-element bytes, to sum a rank's quickly.
  const double per_all = sum(persistent_terms(f, 1, 0, 0)),
               per_mu = sum(persistent_terms(f, 0, 1, 0)),
               per_aw = sum(persistent_terms(f, 0, 0, 1));
  const double check_bytes = 4.0 * double(plan.chunks.size() + inv.tensors.size());
  auto staged = [&](int r) {
    return f.pol.staging == StateStaging::whole ? state_bytes(o, local.muon[r], local.adamw[r]) : 0;
  };
  int peak_rank = 0;
  double best_peak = -1, best_transient = -1;
  for (int r = 0; r < f.world; ++r) {
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
      persistent_terms(f, local.all(peak_rank), local.muon[peak_rank], local.adamw[peak_rank]);
  p.gpu_transient_bytes.push_back(
      {"step_buffers", windows.at(peak_rank),
       "on the peak rank (" + std::to_string(peak_rank) + "): max over " + std::to_string(f.depth) +
           " consecutive chunks in flight of their exchange buffers and gathered matrices, "
           "plus the largest NS scratch" +
           std::string(f.chunked ? " or staged state piece" : "") + " among them" +
           (o.nesterov ? ", Nesterov look-ahead" : "")});
  // The step's non-finite check (docs/muon-step.md section 6) sums each chunk's update and each
  // tensor's AdamW weights into one fp32 on the device and reads them all back at the end.
  p.gpu_transient_bytes.push_back(
      {"nonfinite_check", check_bytes,
       "one fp32 sum per chunk and per tensor (AdamW weights), read back after the step"});
  if (f.pol.staging == StateStaging::whole) {
    p.gpu_transient_bytes.push_back({"staged_optimizer_state", staged(peak_rank),
                                     "whole optimizer state of the rank, on GPU for the step"});
  }

  // Fixed overheads
  const double allocated = sum(p.gpu_persistent_bytes) + sum(p.gpu_transient_bytes);
  p.gpu_fixed_bytes.push_back(
      {"cuda_context", topo.overheads.cuda_context_gib * kGiB, "per GPU, outside the allocator"});
  p.gpu_fixed_bytes.push_back({"allocator_slack",
                               allocated * topo.overheads.allocator_slack_fraction,
                               "fragmentation reserve on allocated bytes"});
  return peak_rank;
}

// Host RAM per node: the busiest node.
void add_host_memory(Prediction& p, const Topology& topo, const StepFigures& f,
                     const ChunkPlan& plan) {
  const PlanOptions& o = f.o;
  const OffloadPolicy& pol = f.pol;
  const LocalElems& local = f.local;
  const int gpn = f.gpn, world = f.world;
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
  if (f.host_pipeline) {
    // Pinned staging for the batches in flight: bf16 momentum, update and weights per batch.
    double pinned = 0;
    for (const Chunk& c : plan.chunks) {
      if (c.kind != Chunk::Kind::adamw_group) {
        pinned = std::max(pinned, 3 * 2.0 * double(c.params) / std::max(1, c.group_size));
      }
    }
    p.host_bytes_per_node.push_back({"pinned_staging", pinned * f.depth * gpn,
                                     "bf16 momentum, update and weights of the batches in flight"});
  }
  p.host_bytes_per_node.push_back({"process_overhead",
                                   topo.overheads.host_per_process_gib * kGiB * gpn,
                                   "runtime and libraries per rank"});
}

// Traffic per GPU: the exchanges' bytes and what crosses PCIe each way.
void add_traffic(Prediction& p, const StepFigures& f, const ChunkPlan& plan) {
  const OffloadPolicy& pol = f.pol;
  p.alltoall_bytes_per_rank_max = plan.loads.max_bytes();
  p.comm_bytes.push_back({"alltoall_sent", p.alltoall_bytes_per_rank_max,
                          "bytes the busiest rank sends in both exchanges"});
  if (pol.staging != StateStaging::none) p.h2d_bytes_per_gpu = p.d2h_bytes_per_gpu = f.state;
  if (pol.host_fold) {
    p.d2h_bytes_per_gpu += 2 * f.all;  // bf16 grads (the host folds Muon's, AdamW updates its own)
    p.h2d_bytes_per_gpu += 2 * f.mu;   // bf16 momentum, the NS input
  }
  if (pol.host_apply) {
    p.d2h_bytes_per_gpu += 2 * f.mu;   // bf16 update
    p.h2d_bytes_per_gpu += 2 * f.all;  // new bf16 weights
  }
  p.comm_bytes.push_back({"h2d", p.h2d_bytes_per_gpu, "host to GPU per step"});
  p.comm_bytes.push_back({"d2h", p.d2h_bytes_per_gpu, "GPU to host per step"});
}

// Optimizer-step time: the chunks pipelined `depth` deep, whole staging's transfers around
// them, and the schedule a trace draws.
void add_step_time(Prediction& p, const StepFigures& f,
                   const std::vector<std::vector<Stage>>& stages) {
  const Rates& rt = f.rt;
  const double state = f.state;
  const int depth = f.depth;
  const PipelineResult pr = simulate_pipeline(stages, depth);
  double staged_s = 0;
  if (f.pol.staging == StateStaging::whole) {
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
}

// What a training step's cost needs of the optimizer's (workload_cost.h).
OptimizerPhases optimizer_phases(const StepFigures& f,
                                 const std::vector<std::vector<Stage>>& stages) {
  OptimizerPhases phases;
  if (f.host_pipeline) {
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
    const PipelineResult post_run = simulate_pipeline(post, f.depth);
    phases.post_backward_s = post_run.makespan_s;
    phases.post_backward_bound = bounding_resource(post_run);
  }
  phases.host_update_elems = f.aw;
  phases.muon_elems = f.mu;
  phases.all_elems = f.all;
  phases.cpu_bps_per_rank = f.rt.cpu_bps_per_rank;
  phases.d2h_bps = f.rt.d2h_bps;
  phases.h2d_bps = f.rt.h2d_bps;
  return phases;
}

}  // namespace

// Memory, traffic and time of one candidate; each part in its own function above, from the
// figures step_figures computes once.
Prediction predict(const ModelSpec& spec, const ParamInventory& inv, const Topology& topo,
                   const PlanOptions& o, const ChunkPlan& plan) {
  Prediction p;
  const StepFigures f = step_figures(inv, topo, o, plan);
  const ChunkCosts chunks = chunk_costs(inv, topo, f, plan);
  const int peak_rank = add_gpu_memory(p, inv, topo, f, plan, chunks.windows);
  add_host_memory(p, topo, f, plan);
  add_traffic(p, f, plan);
  add_step_time(p, f, chunks.stages);

  // Limits
  p.gpu_limit_bytes = (o.gpu_memory_gib > 0 ? o.gpu_memory_gib : topo.node.gpu.memory_gib) * kGiB;
  p.host_limit_bytes = (o.host_ram_gib > 0 ? o.host_ram_gib : topo.node.host_ram_gib) * kGiB;

  if (o.workload)
    add_workload_terms(spec, inv, topo, o, plan, optimizer_phases(f, chunks.stages), p);
  p.gpu_headroom = o.gpu_headroom_or();
  p.host_headroom = o.host_headroom_or();
  if (o.runtime == RuntimeKind::pytorch)
    add_pytorch_runtime_terms(spec, inv, topo, o, plan, peak_rank, p);
  return p;
}

}  // namespace muonplan
