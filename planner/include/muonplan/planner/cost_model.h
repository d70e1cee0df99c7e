// The cost model: every predicted figure is a sum of named terms (docs/planner.md), so a plan
// can explain itself. Bytes are per GPU (rank) or per node as the name says; the figures for a
// rank are for the busiest rank.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "muonplan/planfile/plan_options.h"
#include "muonplan/planfile/prediction.h"
#include "muonplan/planner/chunks.h"
#include "muonplan/planner/inventory.h"
#include "muonplan/planner/topology.h"

namespace muonplan {

struct PipelineResult {
  double makespan_s = 0;
  std::vector<double> busy_s;    // per Resource: total stage time
  std::vector<StageSpan> spans;  // every stage, in the order the simulator ran them
};
// Runs chunks (each a stage sequence) with at most `depth` in flight, in order, each
// resource serving one stage at a time (earliest-ready first).
PipelineResult simulate_pipeline(const std::vector<std::vector<Stage>>& chunks, int depth);

// What predict computes. `without_allocator_replay` leaves out the caching-allocator replay
// (step_timeline.h), most of a prediction's cost: the GPU memory figures then lack its terms
// (Prediction::allocator_replayed is false) and must not be read; every time, traffic and host
// figure is the same as with `all`. calibrate searches a constant that moves no GPU memory figure
// this way (tests/unit/cost_parts_test.cc checks which figures each fitted constant moves).
enum class PredictParts { all, without_allocator_replay };

// Predicts one candidate. `chunks` must come from build_chunks for the same layout and world.
Prediction predict(const ModelSpec& spec, const ParamInventory& inv, const Topology& topo,
                   const PlanOptions& opts, const ChunkPlan& chunks,
                   PredictParts parts = PredictParts::all);

// The cost model's work since the process started: candidates predicted, and per-rank window
// steps (one rank's buffers of one chunk) over them. `plan` prints it under
// MUONPLAN_WORK_STATS, so a test can check that a candidate costs the ranks its chunks touch,
// not chunks x world, without timing anything.
struct CostWork {
  uint64_t predictions = 0, rank_window_steps = 0;
};
CostWork cost_work();

}  // namespace muonplan
