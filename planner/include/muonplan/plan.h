// The Plan: what the planner decided and predicts, and what the executor runs. Its JSON form
// (schema "muonplan.plan/1", docs/cli-contract.md) is the interface between the two.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "muonplan/chunks.h"
#include "muonplan/cost_model.h"
#include "muonplan/inventory.h"
#include "muonplan/plan_options.h"
#include "muonplan/topology.h"

namespace muonplan {

inline constexpr const char* kPlanSchema = "muonplan.plan/1";

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
};

// What to search: fixed or automatic node count and offload mode.
struct PlanRequest {
  PlanOptions options;  // options.nodes / options.offload are used when not automatic
  bool auto_nodes = false;
  bool auto_offload = false;
  int max_nodes = 0;  // 0: the topology's max_nodes
  // auto_nodes searches these (ascending, each at most max_nodes) when not empty, else
  // 1..max_nodes: a report's sweep chooses among its own node counts.
  std::vector<int> node_counts;
  // Layout search: enumerate ep (divisors of the expert count that divide the world) and, with
  // a workload, cp (1, 2, 4, 8 dividing the sequence); a dimension the layout names is fixed.
  bool search_ep = false, search_cp = false;
};

struct Plan {
  std::string model_name;
  std::string topology_name;
  Topology topology;
  PlanOptions options;  // the chosen candidate's (nodes, offload, resolved layout)
  int world = 0;
  int gpus_per_node = 0;
  ParamInventory inventory;  // as planned (Muon rules dropped for adamw/signsgd)
  ChunkPlan chunks;
  Prediction predicted;
  bool fits = false;
  std::vector<Candidate> candidates;
  std::string reason;
};

// Evaluates the candidates and returns the chosen plan. InputError for impossible requests
// (a layout no candidate world can take, zero nodes); "fits nowhere" is a plan with fits false.
Plan make_plan(const ModelSpec& spec, const Topology& topo, const PlanRequest& request);

nlohmann::json plan_to_json(const Plan& plan);
// The plan file's `workload` (also the report's inputs): its fields by name, null without one.
nlohmann::json workload_to_json(const std::optional<Workload>& workload);

// The inverse of plan_to_json for everything the executor runs (plan_load.cc): options, world,
// inventory (tensors; layer unknown, mtp false), chunks with their owners and per-rank local
// work, and the decision. Predictions are not read back: they depend on the topology, which the
// plan names but does not hold. InputError "FILE: field: message" for malformed JSON, a schema
// other than kPlanSchema, missing or mistyped keys, unknown tensor names, owners out of range,
// chunks that do not cover every tensor exactly once, and layouts that do not divide the world.
Plan plan_from_json(const nlohmann::json& j, const std::string& path_for_errors);
Plan load_plan(const std::string& path);  // reads and parses FILE, then plan_from_json

}  // namespace muonplan
