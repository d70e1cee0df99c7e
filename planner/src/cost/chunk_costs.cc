// Each chunk's stages on the busiest rank and its buffers on every rank (step_figures.h): the
// input of the step's schedule and of its transient memory.
#include <algorithm>

#include "cost/step_figures.h"
#include "cost/torch_adamw.h"
#include "muonplan/planfile/ns_workspace.h"
#include "muonplan/planfile/stage_names.h"
#include "muonplan/planfile/step_buffers.h"
#include "muonplan/planner/layout.h"
#include "muonplan/planner/ns_model.h"

namespace muonplan::step_cost {
namespace {

// NS scratch of `count` matrices in one call: the executor's workspace (ns_workspace.h).
double ns_scratch_bytes(int64_t count, int64_t rows, int64_t cols) {
  return double(ns_workspace_layout(count, rows, cols).total);
}

// `chunked` staging: per rank, its largest AdamW tensor's elements (the piece staged at once).
std::vector<double> largest_adamw_piece(const ParamInventory& inv, const StepFigures& f) {
  std::vector<double> adamw_piece(f.cc.world, 0);
  for (const ParamTensor& t : inv.tensors) {
    if (t.rule != UpdateRule::adamw || (t.mtp && !f.o.include_mtp)) continue;
    const ShardRule sr = shard_rule(t, f.o.layout, f.cc.world);
    const double per_entry = double(t.numel() / t.shape[0]);
    for (int r = 0; r < f.cc.world; ++r)
      adamw_piece[r] = std::max(adamw_piece[r], double(sr.range(t.shape[0], r).size()) * per_entry);
  }
  return adamw_piece;
}

// An AdamW group's stages on the busiest rank, `elems` of its elements there.
std::vector<Stage> adamw_stages(const StepFigures& f, double elems) {
  const Rates& rt = f.cc.rates;
  const ElemBytes& eb = f.cc.bytes;
  // One pass, or torch's foreach passes (torch_adamw.h): 28 or 80 B fp32, 14 or 40 B bf16.
  const double adamw_bpe = adamw_step_bytes_per_elem(f.o, f.pol, eb);
  // The host reads the fp32 gradient, then its update pass (candidate_context.h): 30 B fp32.
  const double cpu_adamw_bpe = double(elem_bytes::kGrad) + eb.host_update;
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
  const Rates& rt = f.cc.rates;
  const HostPasses& passes = f.passes;
  const ElemBytes& eb = f.cc.bytes;
  const double mom_b = eb.muon_state;  // 2 (bf16 momentum or masters) or 4
  const double mb = eb.master;         // G and W: optimization_dtype
  // GPU momentum fold: read G, read+write M, with Nesterov write+read U (fp32), write the
  // bf16 copy that is exchanged (2).
  const double momentum_bpe = mb + 2 * mom_b + (o.nesterov ? 8 : 0) + 2;
  const double update_bpe = mb + 2 + mb;  // read W, read bf16 update, write W (decay folded in)
  // host: read the fp32 G, read+write M (candidate_context.h)
  const double cpu_fold_bpe = double(elem_bytes::kGrad) + eb.host_fold;
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
    state_elems = f.aw * f.cc.bytes.adamw_state;  // 0 under signSGD
    st = adamw_stages(f, elems);
  } else {
    double ns_s = 0, exch_s = 0;
    if (c.kind == Chunk::Kind::muon_batch) {
      elems = bt.max_held_elems();
      ns_s = ns_cost(topo, 1, c.rows, c.cols, o.schedule).total_s;
      exch_s = bt.exchange_s;
    } else {
      const int64_t count = c.local.max();
      elems = double(count) * c.rows * c.cols;
      ns_s = count > 0 ? ns_cost(topo, count, c.rows, c.cols, o.schedule).total_s : 0;
    }
    state_elems = elems * f.cc.bytes.muon_state;
    st = muon_stages(f, elems, ns_s, exch_s);
  }
  if (f.chunked) {
    st.insert(st.begin(), {Resource::pcie_h2d, state_elems / f.cc.rates.h2d_bps, stage::kStateH2D});
    st.push_back({Resource::pcie_d2h, state_elems / f.cc.rates.d2h_bps, stage::kStateD2H});
  }
  return st;
}

// The world ranks a batch touches: every replica of a position that holds a slice or owns a
// matrix (bt.touched), each once. `ranks` is reused across chunks.
const std::vector<int>& batch_ranks(const BatchTraffic& bt, int g, int world,
                                    std::vector<int>& ranks) {
  ranks.clear();
  for (int pos : bt.touched) {
    for (int r = pos; r < world; r += g) ranks.push_back(r);
  }
  return ranks;
}

// The world ranks holding at least one entry of an expert stack (LocalCounts::at > 0): per ep
// slice, the first dp ranks whose torch.chunk share of it is not empty (layout.h).
const std::vector<int>& stack_ranks(const LocalCounts& rule, std::vector<int>& ranks) {
  ranks.clear();
  for (int e = 0; e < rule.ep; ++e) {
    const int64_t slice = chunk_range(rule.entries, rule.ep, e).size();
    if (slice <= 0) continue;
    const int64_t per = (slice + rule.dp - 1) / rule.dp;
    const int64_t holders = std::min<int64_t>(rule.dp, (slice + per - 1) / per);
    for (int64_t d = 0; d < holders; ++d) ranks.push_back(int(e + int64_t(rule.ep) * d));
  }
  return ranks;
}

// The chunk's buffers on each rank, into that rank's windows. A batch: send and receive
// buffers of both exchanges (bf16) and, on owners, the gathered matrix, held while in
// flight; the NS workspace on owners only during NS. Local work needs no exchange: its bf16
// copies, workspace and look-ahead live only while it computes. `chunked` staging brings
// state one piece at a time (a rank's slice of a batch matrix, a local entry, an AdamW
// tensor), written back before the next: scratch too.
void add_chunk_buffers(RankWindows& windows, const StepFigures& f, const Chunk& c,
                       const BatchTraffic& bt, const std::vector<double>& adamw_piece,
                       std::vector<int>& ranks) {
  const PlanOptions& o = f.o;
  const bool chunked = f.chunked;
  const double mom_bytes = f.cc.bytes.muon_state;
  const double adamw_piece_bytes = f.cc.bytes.adamw_state;  // 0 under signSGD
  const double mat = double(c.rows) * double(c.cols);
  if (c.kind == Chunk::Kind::muon_batch) {
    const double ws = ns_scratch_bytes(1, c.rows, c.cols);
    windows.add_sparse(batch_ranks(bt, c.group_size, f.cc.world, ranks), [&](int r) {
      const int pos = r % c.group_size;
      const double held = bt.buffer_elems[pos];
      const BatchBuffers b = batch_buffers(int64_t(held), bt.owns[pos], c.rows, c.cols);
      double h = double(b.total()) + (o.nesterov ? 4 * held : 0);
      double sc = bt.owns[pos] ? ws : 0;
      if (chunked) sc = std::max(sc, bt.largest_slice[pos] * mom_bytes);
      return std::make_pair(h, sc);
    });
  } else if (c.kind == Chunk::Kind::muon_local) {
    auto local_buffers = [&](int r) {
      const int64_t n = c.local.at(r);
      double sc = double(local_chunk_bytes(n, c.rows, c.cols)) +
                  ns_scratch_bytes(n, c.rows, c.cols) + (o.nesterov ? 4.0 * double(n) * mat : 0);
      if (chunked && n > 0) sc = std::max(sc, mat * mom_bytes);
      return std::make_pair(0.0, sc);
    };
    // A rank with no entry of an expert stack holds nothing of its chunk (all terms 0).
    if (c.local.stacked) {
      windows.add_sparse(stack_ranks(c.local, ranks), local_buffers);
    } else {
      windows.add(local_buffers);
    }
  } else if (chunked) {
    windows.add([&](int r) { return std::make_pair(0.0, adamw_piece[r] * adamw_piece_bytes); });
  } else {
    windows.add_sparse({}, [](int) { return std::make_pair(0.0, 0.0); });
  }
}

}  // namespace

ChunkCosts chunk_costs(const ParamInventory& inv, const Topology& topo, const StepFigures& f,
                       const ChunkPlan& plan) {
  ChunkCosts cc{{}, RankWindows(f.cc.world, f.depth)};
  const std::vector<double> adamw_piece =
      f.chunked ? largest_adamw_piece(inv, f) : std::vector<double>{};
  BatchTraffic bt;         // one for every batch (step_traffic.h)
  std::vector<int> ranks;  // the ranks a chunk touches
  for (const Chunk& c : plan.chunks) {
    // Other chunks do not read bt: it keeps the last batch's figures and arrays.
    if (c.kind == Chunk::Kind::muon_batch)
      batch_traffic(inv, c, f.cc.rates, f.cc.gpus_per_node, bt);
    cc.stages.push_back(chunk_stages(topo, f, c, bt));
    add_chunk_buffers(cc.windows, f, c, bt, adamw_piece, ranks);
  }
  cc.windows.finish();
  return cc;
}

}  // namespace muonplan::step_cost
