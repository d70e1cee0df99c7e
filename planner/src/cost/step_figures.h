// The figures every part of a prediction reads, and each chunk's stages and buffers: shared by
// cost_model.cc (memory, traffic, time) and chunk_costs.cc (the per-chunk pieces). Internal to
// the cost model.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "cost/candidate_context.h"
#include "cost/gpu_persistent.h"
#include "cost/step_traffic.h"
#include "cost/workload_cost.h"
#include "muonplan/planfile/offload_policy.h"
#include "muonplan/planner/cost_model.h"

namespace muonplan::step_cost {

// Elements each world rank holds, by update rule.
struct LocalElems {
  std::vector<double> muon, adamw;
  double all(int r) const { return muon[r] + adamw[r]; }
};

// Optimizer-state bytes per element: gpu_persistent.h (muon_state_bytes, adamw_state_bytes,
// state_bytes), stated once for the cost model and the search's lower bound.
using muonplan::adamw_state_bytes;
using muonplan::muon_state_bytes;
using muonplan::state_bytes;

// Per rank, the heaviest window of `depth` consecutive chunks in flight: the bytes they hold
// summed, plus the largest scratch among them (compute runs one chunk at a time). Each rank's
// own sum: the busiest ranks of different chunks are different ranks.
// A chunk touches few ranks of a large world (a batch: its matrices' holders and owners; an
// expert stack: the ranks with entries), and a rank it does not touch holds nothing of it:
// add_sparse visits only the touched ranks and a rank catches up on the chunks that passed it
// by (zeros) when next touched, or in finish(). The arithmetic per rank is the dense add's,
// in the same order, so the figures are bit-identical; a chunk costs its touched ranks, not
// the world.
class RankWindows {
 public:
  RankWindows(int world, int depth)
      : world_(world),
        depth_(depth),
        held_(size_t(world) * depth, 0),
        scratch_(size_t(world) * depth, 0),
        sum_(world, 0),
        best_(world, 0),
        seen_(world, 0) {}
  // held_scratch(r) -> {held, scratch} of the next chunk on rank r, every rank.
  template <class F>
  void add(F held_scratch) {
    for (int r = 0; r < world_; ++r) {
      const auto [h, sc] = held_scratch(r);
      touch(r, h, sc);
    }
    ++n_;
  }
  // As add, where every rank not in `ranks` (each listed once) holds {0, 0} of the chunk.
  template <class F>
  void add_sparse(const std::vector<int>& ranks, F held_scratch) {
    for (int r : ranks) {
      const auto [h, sc] = held_scratch(r);
      touch(r, h, sc);
    }
    ++n_;
  }
  // Brings every rank up to the last chunk added; at() reads finished windows.
  void finish() {
    for (int r = 0; r < world_; ++r) catch_up(r);
  }
  double at(int r) const { return best_[r]; }
  uint64_t steps() const { return steps_; }  // rank-chunk steps taken (cost_work)

 private:
  // Rank r's window after the next chunk, {h, sc} on r, once r has caught up.
  void touch(int r, double h, double sc) {
    catch_up(r);
    step(r, n_ % size_t(depth_), h, sc);
    seen_[r] = n_ + 1;
  }
  // The chunks since r was last touched hold nothing on r. After `depth` of them r's window
  // is all zeros and further zero chunks change nothing, so at most `depth` are stepped.
  void catch_up(int r) {
    const size_t missed = std::min(n_ - seen_[r], size_t(depth_));
    for (size_t k = 0; k < missed; ++k) step(r, (seen_[r] + k) % size_t(depth_), 0.0, 0.0);
    seen_[r] = n_;
  }
  void step(int r, size_t slot, double h, double sc) {
    double* held = &held_[size_t(r) * depth_];
    double* scratch = &scratch_[size_t(r) * depth_];
    ++steps_;
    sum_[r] += h - held[slot];
    held[slot] = h;
    scratch[slot] = sc;
    best_[r] = std::max(best_[r], sum_[r] + *std::max_element(scratch, scratch + depth_));
  }

  int world_, depth_;
  size_t n_ = 0;  // chunks added
  uint64_t steps_ = 0;
  std::vector<double> held_, scratch_, sum_, best_;
  std::vector<size_t> seen_;  // per rank, the chunks it has caught up with
};

// The figures every part of a prediction reads, computed once per candidate: its context
// (GPUs per node, world, rates, bytes per element) and what the optimizer step adds to it.
struct StepFigures {
  const CandidateContext& cc;
  const PlanOptions& o;  // cc.o
  // Where each array lives and what moves: the offload policy's table (offload_policy.h).
  const OffloadPolicy& pol;
  int depth;  // chunks in flight
  LocalElems local;
  HostPasses passes;  // host apply bytes per element, by runtime
  bool muon, chunked, host_pipeline;
  // The busiest rank by persistent bytes: its elements (all, Muon's, AdamW's) and state bytes.
  double all, mu, aw, state;
};

// Every chunk's stages (the schedule's input) and, per rank, the bytes each chunk holds while
// in flight and scratch that lives only during its GPU compute (RankWindows).
struct ChunkCosts {
  std::vector<std::vector<Stage>> stages;
  RankWindows windows;
};

// Every chunk's stages on the busiest rank and its buffers on each rank (chunk_costs.cc).
ChunkCosts chunk_costs(const ParamInventory& inv, const Topology& topo, const StepFigures& f,
                       const ChunkPlan& plan);

}  // namespace muonplan::step_cost
