// The capacity report's data (docs/report.md): the planner's predictions over a sweep of node
// counts, offload modes and optimizer variants; the plan the search chooses, with its named
// terms and the per-rank loads every owner strategy would give it; and optionally executor
// metrics beside their predictions. reports/report.py turns it into report.md and plots and
// computes nothing the planner could: every figure it draws is a number of this JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "muonplan/planner/plan.h"
#include "muonplan/planner/plan_request.h"
#include "muonplan/planner/topology.h"

namespace muonplan {

inline constexpr const char* kReportSchema = "muonplan.report/1";

// "1..4", "2,4,8" or "3": positive node counts up to max_nodes (the topology's), returned
// ascending without duplicates. InputError "--nodes: ..." otherwise.
std::vector<int> parse_node_counts(const std::string& text, int max_nodes);
// Without --nodes: 1..8, capped at the topology's max_nodes.
// 1..kDefaultSweepNodes, at most the topology's max_nodes.
inline constexpr int kDefaultSweepNodes = 8;
std::vector<int> default_node_counts(const Topology& topo);
// The sweep predicts at most this many node counts (x 3 offload modes x 4 optimizers): 128
// counts are 1536 fixed plans, which a 16384-node kimi-k2 request would otherwise multiply
// 128-fold (issue 33 item 17).
inline constexpr size_t kMaxSweepNodeCounts = 128;
// `counts` (ascending) if there are at most kMaxSweepNodeCounts, else that many of them, evenly
// spaced by index, the first, the last and `chosen` among them; ascending.
std::vector<int> sweep_node_counts(const std::vector<int>& counts, int chosen);

// The optimizer variants the sweep compares: muon, muon with bf16 momentum, adamw, signsgd.
struct OptimizerVariant {
  std::string name;  // "muon", "muon-bf16-momentum", "adamw", "signsgd"
  OptimizerKind kind = OptimizerKind::muon;
  bool bf16_momentum = false;
};
const std::vector<OptimizerVariant>& report_optimizer_variants();

struct ReportInputs {
  std::string model_path, topology_path;
  std::vector<int> node_counts;         // parse_node_counts
  std::vector<nlohmann::json> metrics;  // load_metrics results
  nlohmann::json measured_trace;        // `muonplan execute --trace` output, or null
};

// `base` carries the user's options; the sweep replaces its node count, offload mode and
// optimizer, and the chosen plan is `base` searched over the sweep's node counts and every
// offload mode (for 1..MAX what `muonplan plan --max-nodes MAX` prints). Sweep points whose world
// the layout cannot take (or that the options rule out) are listed with evaluated false and the
// planner's message. InputError for requests no point could satisfy.
nlohmann::json report_data(const ModelSpec& spec, const Topology& topo, const PlanRequest& base,
                           const ReportInputs& inputs);

// Reads an executor metrics JSON (`muonplan execute --metrics`): the file's object with "path"
// added. InputError "FILE: field: ..." when unreadable, not JSON, or without "measured" and
// "predicted" objects.
nlohmann::json load_metrics(const std::string& path);

// Writes DIR/report-data.json (creating DIR) and runs `PYTHON SCRIPT DIR/report-data.json DIR`.
// PYTHON: $MUONPLAN_REPORT_PYTHON if set, else /usr/bin/python3 (Debian's, with matplotlib).
// std::runtime_error carrying the script's stderr when it fails.
void render_report(const nlohmann::json& data, const std::string& out_dir,
                   const std::string& script);

}  // namespace muonplan
