// The capacity report's data: a sweep of fixed-node, fixed-offload plans, the searched plan,
// and the per-rank loads of each owner strategy on it. Plots come from reports/report.py.
#include "muonplan/tools/report_data.h"
#include "muonplan/tools/report_dir.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "muonplan/base/error.h"
#include "muonplan/base/io.h"
#include "muonplan/base/parse_int.h"
#include "muonplan/planfile/plan_checks.h"
#include "muonplan/planfile/trace.h"
#include "muonplan/tools/child_process.h"

namespace muonplan {
namespace {

using json = nlohmann::json;

int parse_count(const std::string& part, const std::string& text) {
  const std::optional<int64_t> v = parse_int(part, 1, std::numeric_limits<int>::max());
  if (!v) {
    throw InputError({}, "--nodes",
                     "expected a node count, a range A..B or a list A,B,C of positive integers, "
                     "got '" +
                         text + "'");
  }
  return static_cast<int>(*v);
}

json loads_json(OwnerStrategy s, const RankLoads& loads) {
  const double ranks = static_cast<double>(loads.alltoall_bytes.size());
  return {{"owners", to_string(s)},
          {"alltoall_bytes_per_rank", loads.alltoall_bytes},
          {"ns_flops_per_rank", loads.ns_flops},
          {"alltoall_bytes_max", loads.max_bytes()},
          {"alltoall_bytes_mean", loads.total_bytes() / ranks},
          {"ns_flops_max", loads.max_flops()},
          {"ns_flops_mean", loads.total_flops() / ranks}};
}

json inputs_json(const PlanRequest& base, const ReportInputs& in) {
  const PlanOptions& o = base.options;
  const json workload = workload_to_json(o.workload);
  json metrics_paths = json::array();
  for (const json& m : in.metrics) metrics_paths.push_back(m.at("path"));
  return {{"model_path", in.model_path},
          {"topology_path", in.topology_path},
          {"node_counts", in.node_counts},
          {"layout", o.layout.fsdp == 0 && o.layout.cp == 1 && o.layout.ep == 1
                         ? "default (FSDP over all ranks)"
                         : to_string(o.layout)},
          {"optimizer", to_string(o.optimizer)},
          {"bf16_momentum", o.bf16_momentum},
          {"nesterov", o.nesterov},
          {"owners", to_string(o.owners)},
          {"ns_schedule", o.schedule.name},
          {"gpu_memory_gib_override", o.gpu_memory_gib},
          {"host_ram_gib_override", o.host_ram_gib},
          {"workload", workload},
          {"metrics", metrics_paths}};
}

}  // namespace

std::vector<int> parse_node_counts(const std::string& text, int max_nodes) {
  std::set<int> counts;
  // Bounded before the range is expanded: "1..1000000000" would fill memory.
  auto bounded = [&](int n) {
    if (n > max_nodes) {
      throw InputError({}, "--nodes",
                       "'" + text + "' goes beyond the topology's max_nodes (" +
                           std::to_string(max_nodes) + ")");
    }
    return n;
  };
  const size_t dots = text.find("..");
  if (dots != std::string::npos) {
    const int lo = parse_count(text.substr(0, dots), text);
    const int hi = parse_count(text.substr(dots + 2), text);
    if (hi < lo) throw InputError({}, "--nodes", "empty range '" + text + "'");
    bounded(hi);
    for (int n = lo; n <= hi; ++n) counts.insert(n);
  } else {
    size_t start = 0;
    while (true) {
      const size_t comma = text.find(',', start);
      counts.insert(bounded(parse_count(text.substr(start, comma - start), text)));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return {counts.begin(), counts.end()};
}

std::vector<int> default_node_counts(const Topology& topo) {
  std::vector<int> counts;
  for (int n = 1; n <= std::max(1, std::min(kDefaultSweepNodes, topo.max_nodes)); ++n)
    counts.push_back(n);
  return counts;
}

std::vector<int> sweep_node_counts(const std::vector<int>& counts, int chosen) {
  if (counts.size() <= kMaxSweepNodeCounts) return counts;
  std::set<int> kept = {chosen};
  // kMaxSweepNodeCounts - 1 picks, first and last included: with `chosen` at most the bound.
  const size_t picks = kMaxSweepNodeCounts - 1;
  for (size_t k = 0; k < picks; ++k) kept.insert(counts[k * (counts.size() - 1) / (picks - 1)]);
  return {kept.begin(), kept.end()};
}

const std::vector<OptimizerVariant>& report_optimizer_variants() {
  static const std::vector<OptimizerVariant> variants = {
      {"muon", OptimizerKind::muon, false},
      {"muon-bf16-momentum", OptimizerKind::muon, true},
      {"adamw", OptimizerKind::adamw, false},
      {"signsgd", OptimizerKind::signsgd, false}};
  return variants;
}

namespace {

// One configuration of the sweep: its prediction, or why it was not evaluated.
json sweep_point(const ModelSpec& spec, const Topology& topo, const PlanRequest& base, int nodes,
                 OffloadMode mode, const OptimizerVariant& v) {
  PlanRequest r = base;
  r.auto_nodes = r.auto_offload = false;
  r.options.nodes = nodes;
  r.options.offload = mode;
  r.options.optimizer = v.kind;
  r.options.bf16_momentum = v.bf16_momentum;
  json point = {{"nodes", nodes}, {"offload", to_string(mode)}, {"optimizer", v.name}};
  if (r.options.nesterov && !nesterov_supported(mode)) {
    point["evaluated"] = false;
    point["note"] = kNesterovRefused;
    return point;
  }
  try {
    Plan p = make_plan(spec, topo, r);
    // Only the prediction is kept: the chunk, tensor and shard lists (per-rank owners)
    // are not turned into JSON to be dropped (a third of a 500-count sweep's time).
    p.chunks.chunks.clear();
    p.inventory.tensors.clear();
    p.shards.clear();
    json pj = plan_to_json(p);
    pj["predicted"].erase(metric::kBreakdown);
    point["evaluated"] = true;
    point["fits"] = pj["fits"];
    point["world_size"] = pj["world_size"];
    point["layout"] = pj["layout"];
    point["limits"] = pj["limits"];
    point["predicted"] = pj["predicted"];
  } catch (const InputError& e) {  // the layout does not divide this world
    point["evaluated"] = false;
    point["note"] = e.message();
  }
  return point;
}

// Per-rank loads of every owner strategy on the chosen plan's layout.
json owner_strategies_json(const Plan& chosen) {
  json owners = json::array();
  const int iterations = static_cast<int>(chosen.options.schedule.steps.size());
  for (OwnerStrategy s : {OwnerStrategy::padded, OwnerStrategy::restart, OwnerStrategy::round_robin,
                          OwnerStrategy::balanced}) {
    const ChunkPlan c = build_chunks(chosen.inventory, chosen.options.include_mtp,
                                     chosen.options.layout, chosen.world, s, iterations);
    owners.push_back(loads_json(s, c.loads));
  }
  return owners;
}

}  // namespace

json report_data(const ModelSpec& spec, const Topology& topo, const PlanRequest& base,
                 const ReportInputs& inputs) {
  if (inputs.node_counts.empty()) throw InputError({}, "--nodes", "no node counts");
  // The searched plan first: options no candidate can satisfy fail here, with the CLI's message.
  PlanRequest searched = base;
  searched.auto_nodes = true;
  searched.auto_offload = true;
  searched.max_nodes = inputs.node_counts.back();
  searched.node_counts = inputs.node_counts;  // the chosen node count is one of the sweep's
  const Plan chosen = make_plan(spec, topo, searched);
  json chosen_json = plan_to_json(chosen);
  chosen_json.erase("chunks");
  chosen_json.erase("tensors");

  json sweep = json::array();
  const std::vector<int> swept = sweep_node_counts(inputs.node_counts, chosen.options.nodes);
  for (int nodes : swept) {
    for (OffloadMode mode : {OffloadMode::none, OffloadMode::optimizer, OffloadMode::full}) {
      for (const OptimizerVariant& v : report_optimizer_variants()) {
        sweep.push_back(sweep_point(spec, topo, base, nodes, mode, v));
      }
    }
  }

  const json owners = owner_strategies_json(chosen);

  json optimizer_variants = json::array();
  for (const OptimizerVariant& v : report_optimizer_variants())
    optimizer_variants.push_back(v.name);
  return {{"schema", kReportSchema},
          {"model", chosen.model_name},
          {"topology", chosen.topology_name},
          {"gpus_per_node", chosen.gpus_per_node},
          {"inputs", inputs_json(base, inputs)},
          {"offload_modes", enum_names(kOffloadModeNames)},
          {"optimizer_variants", optimizer_variants},
          {"sweep", sweep},
          {"sweep_node_counts", swept},  // inputs.node_counts, or a sample (kMaxSweepNodeCounts)
          {"chosen", chosen_json},
          {"owner_strategies", owners},
          {"metrics", inputs.metrics},
          // The chosen plan's simulated pipeline, and a measured step beside it when given
          // (trace.h): report.py draws them as Gantt charts.
          {"predicted_trace", predicted_trace(chosen)},
          {"measured_trace", inputs.measured_trace}};
}

json load_metrics(const std::string& path) {
  json j = read_json_file(path);
  check_metrics(j, path);  // schema, measured, predicted; numbers finite, >= 0, not absurd
  j["path"] = path;
  return j;
}

namespace {

// Writes the report into `staging` (report_dir.h) and runs the script there.
void render_into(const json& data, const std::string& staging, const std::string& script) {
  const std::string data_path = (std::filesystem::path(staging) / "report-data.json").string();
  write_file_atomic(data_path, data.dump(1) + "\n");
  const char* env = std::getenv("MUONPLAN_REPORT_PYTHON");
  const std::string python = env && *env ? env : "/usr/bin/python3";
  // stderr captured, stdout dropped: the script's messages are what a failure reports.
  const ChildResult child = run_child({python, script, data_path, staging});
  std::string err = child.stderr_text;
  const int rc = child.exit_code;
  if (rc != 0) {
    while (!err.empty() && err.back() == '\n') err.pop_back();
    // One line when the script says one (report.py's own errors do), else its stderr below.
    const bool one_line = err.find('\n') == std::string::npos;
    throw std::runtime_error(python + " " + script + " failed (exit " + std::to_string(rc) +
                             (one_line ? "): " : "):\n") + err);
  }
}

// `text` with every `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

}  // namespace

void render_report(const json& data, const std::string& out_dir, const std::string& script) {
  ReportDir dir(out_dir);  // refuses a directory that is not ours before anything is written
  try {
    render_into(data, dir.staging(), script);
  } catch (const Interrupted&) {
    throw;  // as it is: the command ends by the signal once `dir` is cleaned up
  } catch (const std::runtime_error& e) {
    // The user named DIR, not its staging directory: messages say where the file was going.
    throw std::runtime_error(replaced(e.what(), dir.staging(), dir.path()));
  }
  dir.publish();
}

}  // namespace muonplan
