// muonplan report: the capacity report. The planner computes every figure into
// DIR/report-data.json; reports/report.py draws the plots and writes DIR/report.md.
#include <cstdio>
#include <iostream>

#include "commands.h"
#include "muonplan/base/io.h"
#include "muonplan/planfile/trace.h"
#include "muonplan/planner/data_dir.h"
#include "muonplan/planner/model_io.h"
#include "muonplan/planner/model_resolve.h"
#include "muonplan/planner/prime_rl.h"
#include "muonplan/tools/report_data.h"
#include "paths.h"

namespace muonplan::cli {
namespace {

struct ReportCommand {
  std::string model, topology = default_topology_path(), nodes, out, trace;
  std::vector<std::string> metrics;
  PlanFlags flags;
  bool json = false;
};

std::string report_script_path() {
  return data_path("reports/report.py");
}

}  // namespace

Runner add_report(CLI::App& app) {
  auto f = std::make_shared<ReportCommand>();
  CLI::App* c = app.add_subcommand(
      "report", "Capacity report: memory, host RAM, step time and owner loads, with plots");
  c->add_option("--model", f->model,
                "YAML spec, config.json or its directory, bundled name, or Hugging Face id "
                "(default: --trainer-config's [model] name)")
      ->check(non_empty_path());
  c->add_option("--topology", f->topology, "Cluster description (YAML)")
      ->capture_default_str()
      ->check(non_empty_path());
  c->add_option("--nodes", f->nodes,
                "Node counts to sweep: A..B or A,B,C (default: 1.." +
                    std::to_string(kDefaultSweepNodes) + ", at most the topology's max_nodes)");
  add_plan_flags(c, f->flags, false);
  c->add_option("--metrics", f->metrics, "Executor metrics JSON (muonplan execute --metrics)")
      ->expected(1, -1)
      ->check(non_empty_path());
  c->add_option("--trace", f->trace,
                "Measured trace (muonplan execute --trace): drawn beside the predicted pipeline")
      ->check(non_empty_path());
  c->add_option("--out", f->out,
                "Directory for report.md, report-data.json and the plots: a new directory, or "
                "one muonplan report wrote (docs/report.md)")
      ->required()
      ->check(non_empty_path());
  c->add_flag("--json", f->json, "Print report-data.json (every figure of the report) to stdout");
  return [f]() {
    std::vector<PathArg> inputs = plan_inputs(f->model, f->topology, f->flags);
    inputs.push_back({"--trace", f->trace});
    for (const std::string& m : f->metrics) inputs.push_back({"--metrics", m});
    refuse_overlaps(inputs, {{"--out", f->out, true}});
    const PlanInputs plan_in = prepare_plan(f->model, f->flags);
    inputs.push_back(resolved_model_input(f->model, plan_in.model));
    refuse_overlaps(inputs, {{"--out", f->out, true}});  // again with the model's file
    for (const std::string& w : trainer_warnings(plan_in)) std::cerr << "warning: " << w << "\n";
    for (const std::string& o : plan_in.overrides) std::cerr << "note: " << o << "\n";
    const ModelSpec& spec = plan_in.model.spec;
    const Topology topo = load_topology(f->topology);
    // prepare_plan takes --runs-on: prime-rl's defaults and rules, as plan takes them.
    std::string layout_note;
    const PlanRequest request = report_request(plan_in, f->flags, layout_note);
    if (!layout_note.empty()) std::cerr << "note: " << layout_note << "\n";
    ReportInputs in;
    in.model_path = f->model.empty() ? plan_in.model.path : f->model;
    in.topology_path = f->topology;
    in.node_counts =
        f->nodes.empty() ? default_node_counts(topo) : parse_node_counts(f->nodes, topo.max_nodes);
    for (const std::string& path : f->metrics) in.metrics.push_back(load_metrics(path));
    if (!f->trace.empty()) {
      in.measured_trace = read_json_file(f->trace);
      trace_events(in.measured_trace, f->trace);  // refuses a file that is not a trace
    }
    const nlohmann::json data = report_data(spec, topo, request, in);
    render_report(data, f->out, report_script_path());
    if (f->json) {
      std::cout << data.dump(1) << "\n";  // report-data.json, as written into DIR
    } else {
      std::printf("wrote %s/report.md\n", f->out.c_str());
    }
    return 0;
  };
}

}  // namespace muonplan::cli
