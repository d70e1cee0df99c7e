// Memory, host RAM, traffic and optimizer-step time of one candidate (docs/planner.md).
#include "muonplan/planner/cost_model.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <numeric>

#include "cost/gpu_persistent.h"
#include "cost/runtime_memory.h"
#include "cost/step_figures.h"
#include "cost/step_traffic.h"
#include "cost/workload_cost.h"
#include "muonplan/base/units.h"
#include "muonplan/planfile/ns_workspace.h"
#include "muonplan/planfile/offload_policy.h"
#include "muonplan/planfile/stage_names.h"
#include "muonplan/planfile/step_buffers.h"
#include "muonplan/planner/layout.h"
#include "muonplan/planner/ns_model.h"
#include "muonplan/planner/owners.h"

namespace muonplan {

// The step's rates, figures and chunk costs (step_traffic.h, step_figures.h).
using namespace step_cost;

namespace {

// Tensors whose placements split alike (row-sharded ones with the same row count, expert
// stacks with the same entry count) are summed first, then spread over the ranks once per
// kind: the cost is tensors plus ranks x distinct shapes, not tensors x ranks.
LocalElems count_local(const std::vector<ParamTensor>& tensors, const PlanOptions& o, int world) {
  LocalElems e{std::vector<double>(world, 0), std::vector<double>(world, 0)};
  const Layout& layout = o.layout;
  // [muon?][row count or entry count] -> elements per row or per entry, summed over tensors.
  std::map<int64_t, double> rows[2], stacks[2];
  for (const ParamTensor& t : tensors) {
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
      const LocalCounts rule{true, n, layout.ep, layout.fsdp / layout.ep};
      for (int r = 0; r < world; ++r) dst[r] += double(rule.at(r)) * w;
    }
  }
  return e;
}

StepFigures step_figures(const ParamInventory& inv, const CandidateContext& cc) {
  const PlanOptions& o = cc.o;
  const int world = cc.world;
  const OffloadPolicy& pol = offload_policy(o.offload, o.optimizer_staging);
  StepFigures f{cc,
                o,
                pol,
                o.batches_in_flight(),
                count_local(inv.tensors, o, world),
                host_passes(o),
                o.optimizer == OptimizerKind::muon,
                pol.staging == OffloadStaging::chunked,
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

// The optimizer step's buffers on the busiest rank (section 4: what the executor allocates, the
// step timeline's input), and that rank: the one whose persistent bytes (persistent_rates, a
// selector: the printed persistent terms are the timeline's tensors, runtime_memory.cc) plus
// these buffers are the most (ties: the larger buffers, then the lower rank). Returns that rank.
int add_step_buffers(Prediction& p, const ParamInventory& inv, const StepFigures& f,
                     const ChunkPlan& plan, const RankWindows& windows) {
  const PlanOptions& o = f.o;
  const LocalElems& local = f.local;
  const PersistentRates per = persistent_rates(o, f.pol);
  const double check_bytes = double(nonfinite_check_bytes(plan.chunks.size(), inv.tensors.size()));
  auto staged = [&](int r) {
    return f.pol.staging == OffloadStaging::whole ? state_bytes(o, local.muon[r], local.adamw[r])
                                                  : 0;
  };
  // LoRA's frozen base weights: FSDP-sharded as trained ones are (gpu_persistent.h).
  const double frozen_b = param_array(o, f.pol, false).bytes;
  const LocalElems frozen = count_local(inv.frozen, o, f.cc.world);
  int peak_rank = 0;
  double best_peak = -1, best_transient = -1;
  for (int r = 0; r < f.cc.world; ++r) {
    const double tr = windows.at(r) + check_bytes + staged(r);
    const double pk = per.all * local.all(r) + per.muon * local.muon[r] +
                      per.adamw * local.adamw[r] + frozen_b * frozen.all(r) + tr;
    if (pk > best_peak || (pk == best_peak && tr > best_transient)) {
      peak_rank = r;
      best_peak = pk;
      best_transient = tr;
    }
  }
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
  if (f.pol.staging == OffloadStaging::whole) {
    p.gpu_transient_bytes.push_back({"staged_optimizer_state", staged(peak_rank),
                                     "whole optimizer state of the rank, on GPU for the step"});
  }
  return peak_rank;
}

// The muonplan runtime's fixed overheads, on the GPU allocated terms once they are all there.
void add_fixed_overheads(Prediction& p, const Topology& topo) {
  p.gpu_fixed_bytes.push_back(
      {"cuda_context", topo.overheads.cuda_context_gib * kGiB, "per GPU, outside the allocator"});
  p.gpu_fixed_bytes.push_back({"allocator_slack",
                               p.gpu_allocated_bytes() * topo.overheads.allocator_slack_fraction,
                               "fragmentation reserve on allocated bytes"});
}

// Host RAM per node: the busiest node.
void add_host_memory(Prediction& p, const Topology& topo, const StepFigures& f,
                     const ChunkPlan& plan) {
  const PlanOptions& o = f.o;
  const OffloadPolicy& pol = f.pol;
  const LocalElems& local = f.local;
  const int gpn = f.cc.gpus_per_node, world = f.cc.world;
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
  if (pol.staging != OffloadStaging::none) p.h2d_bytes_per_gpu = p.d2h_bytes_per_gpu = f.state;
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
  const Rates& rt = f.cc.rates;
  const double state = f.state;
  const int depth = f.depth;
  const PipelineResult pr = simulate_pipeline(stages, depth);
  double staged_s = 0;
  if (f.pol.staging == OffloadStaging::whole) {
    p.step_phases_s.push_back({phase::kStateH2D, state / rt.h2d_bps, "whole state to GPU before"});
    p.step_phases_s.push_back({phase::kStateD2H, state / rt.d2h_bps, "whole state back after"});
    staged_s = state / rt.h2d_bps + state / rt.d2h_bps;
  }
  // In Resource order (prediction.h).
  const char* names[] = {phase::kGpuBusy, phase::kNetworkBusy, phase::kPcieH2DBusy,
                         phase::kPcieD2HBusy, phase::kCpuBusy};
  double busy_total = 0;
  for (int r = 0; r < 5; ++r) {
    busy_total += pr.busy_s[r];
    if (pr.busy_s[r] > 0) p.step_phases_s.push_back({names[r], pr.busy_s[r], "sum of stages"});
  }
  p.step_phases_s.push_back(
      {phase::kPipelinedChunks, pr.makespan_s, std::to_string(depth) + " chunks in flight"});
  p.step_phases_s.push_back(
      {phase::kOverlapped, busy_total - pr.makespan_s, "stage time hidden behind other resources"});
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
  phases.cpu_bps_per_rank = f.cc.rates.cpu_bps_per_rank;
  phases.d2h_bps = f.cc.rates.d2h_bps;
  phases.h2d_bps = f.cc.rates.h2d_bps;
  return phases;
}

}  // namespace

namespace {
std::atomic<uint64_t> predictions{0}, rank_window_steps{0};  // cost_work()
}  // namespace

CostWork cost_work() {
  return {predictions.load(), rank_window_steps.load()};
}

// Memory, traffic and time of one candidate; each part in its own function above, from the
// figures step_figures computes once.
Prediction predict(const ModelSpec& spec, const ParamInventory& inv, const Topology& topo,
                   const PlanOptions& o, const ChunkPlan& plan, PredictParts parts) {
  Prediction p;
  const CandidateContext cc = candidate_context(spec, topo, o, plan.world);
  const StepFigures f = step_figures(inv, cc);
  const ChunkCosts chunks = chunk_costs(inv, topo, f, plan);
  predictions.fetch_add(1, std::memory_order_relaxed);
  rank_window_steps.fetch_add(chunks.windows.steps(), std::memory_order_relaxed);
  const int peak_rank = add_step_buffers(p, inv, f, plan, chunks.windows);
  p.gpu_peak_rank = peak_rank;
  add_host_memory(p, topo, f, plan);
  add_traffic(p, f, plan);
  add_step_time(p, f, chunks.stages);

  // Limits
  p.gpu_limit_bytes = cc.gpu_limit_bytes;
  p.host_limit_bytes = cc.host_limit_bytes;

  if (o.workload) add_workload_terms(spec, inv, cc, plan, optimizer_phases(f, chunks.stages), p);
  p.gpu_headroom = o.gpu_headroom_or();
  p.host_headroom = o.host_headroom_or();
  // The GPU allocated terms are the step timeline's, with a workload or without (the optimizer
  // step alone), under either runtime (under pytorch through the allocator replay); without the
  // replay they are not read.
  const bool replay = parts != PredictParts::without_allocator_replay;
  if (o.runtime == RuntimeKind::muonplan) {
    if (replay) add_muonplan_timeline_terms(spec, inv, cc, plan, peak_rank, p);
    add_fixed_overheads(p, topo);
  } else {
    add_pytorch_runtime_terms(spec, inv, cc, plan, peak_rank, replay, p);
  }
  return p;
}

}  // namespace muonplan
