// The Plan: what the planner decided and predicts, and what the executor runs. Its JSON form
// (schema "muonplan.plan/2", docs/cli-contract.md) is the interface between the two, and this
// library (muonplan_planfile: types, writer, reader; nlohmann-json only) all the executor links
// of the planner's side. Everything the executor needs is resolved in the file: per-tensor shard
// rules, chunks with owners, batches in flight, hyperparameters with defaults applied, the NS
// coefficients.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "muonplan/planfile/chunk_plan.h"
#include "muonplan/planfile/metric_keys.h"
#include "muonplan/planfile/param_inventory.h"
#include "muonplan/planfile/plan_options.h"
#include "muonplan/planfile/prediction.h"
#include "muonplan/planfile/topology_spec.h"

namespace muonplan {

// /2: tensors[].shard and the chunks' predicted_ns_ms carried rather than re-derived.
inline constexpr const char* kPlanSchema = "muonplan.plan/2";

struct Candidate {
  int nodes = 0;
  OffloadMode offload = OffloadMode::none;
  std::string layout;      // resolved, "fsdp=F,cp=C,ep=E"; empty when it did not resolve
  bool evaluated = false;  // false: the layout does not divide this world (see note)
  bool fits = false;
  double gpu_peak_gib = 0;
  double host_ram_per_node_gib = 0;
  double step_s = 0;
  double gpu_seconds = 0;
  std::string note;
  double fit_margin = 0;  // Prediction::fit_margin: fits by (> 0) or misses by (< 0) this fraction
};

struct Plan {
  std::string model_name;
  std::string topology_name;
  Topology topology;
  PlanOptions options;  // the chosen candidate's (nodes, offload, resolved layout)
  int world = 0;
  int gpus_per_node = 0;
  ParamInventory inventory;       // as planned (Muon rules dropped for adamw/signsgd)
  std::vector<ShardRule> shards;  // per inventory tensor: where its rows sit (tensors[].shard)
  ChunkPlan chunks;
  int batches_in_flight = 1;  // Muon batches between their exchanges at once (the policy's)
  Prediction predicted;
  bool fits = false;
  std::vector<Candidate> candidates;
  std::string reason;
};

nlohmann::json plan_to_json(const Plan& plan);
// The figures of plan.json's `predicted` (metric_keys.h), from the Prediction, the world and the
// chunks' loads.
PredictedFigures predicted_figures(const Plan& plan);
// The plan file's `workload` (also the report's inputs): its fields by name, null without one.
nlohmann::json workload_to_json(const std::optional<Workload>& workload);

// The inverse of plan_to_json for everything the executor runs (plan_load.cc): options, world,
// inventory (tensors; layer unknown, mtp false) with their shard rules, chunks with their owners
// and per-rank local work, and the decision. Predictions other than the chunks' NS times are
// not read back (nor chunks.loads): they depend on the topology, which the plan names but does
// not hold; the planner's tools recompute them. InputError "FILE: field: message" for malformed
// JSON, a schema other than kPlanSchema, missing or mistyped keys, unknown tensor names, owners out
// of range, chunks that do not cover every tensor exactly once, and layouts that do not divide the
// world.
Plan plan_from_json(const nlohmann::json& j, const std::string& path_for_errors);
Plan load_plan(const std::string& path);  // reads and parses FILE, then plan_from_json

// The same run on one rank with whole matrices, derived from the plan alone (the executor's
// --check-reference): the plan's chunks in its order, each batch's matrices as local work of
// one matrix each (padding dropped), every tensor whole on rank 0 (replicated, stacks over
// ep = dp = 1), the same optimizer and offload settings.
Plan on_one_rank(const Plan& plan);

}  // namespace muonplan
