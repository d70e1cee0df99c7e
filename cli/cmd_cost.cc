// muonplan cost ns: predicted time of one batched Newton-Schulz call on a topology's GPU.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "muonplan/planner/json_forms.h"
#include "muonplan/planner/ns_model.h"

namespace muonplan::cli {
namespace {

struct CostFlags {
  std::string topology = default_topology_path(), schedule = "quintic";
  int64_t batch = 1, rows = 0, cols = 0;
  bool symmetric = false, json = false;
};

}  // namespace

Runner add_cost(CLI::App& app) {
  auto f = std::make_shared<CostFlags>();
  CLI::App* cost = app.add_subcommand("cost", "Predicted cost of one operation");
  cost->require_subcommand(1);
  CLI::App* ns = cost->add_subcommand("ns", "One batched Newton-Schulz call");
  ns->add_option("--topology", f->topology, "Cluster description (YAML)")->capture_default_str();
  ns->add_option("--batch", f->batch, "Matrices in the call")->capture_default_str();
  ns->add_option("--rows", f->rows, "Rows of each matrix")->required();
  ns->add_option("--cols", f->cols, "Columns of each matrix")->required();
  ns->add_option("--ns-schedule", f->schedule, "Schedule preset or explicit list")
      ->capture_default_str();
  ns->add_flag("--symmetric", f->symmetric, "Symmetric products (one triangle of X X^T, A A)");
  ns->add_flag("--json", f->json, "Machine-readable output");
  return [f]() {
    check_ns_shape(f->batch, f->rows, f->cols);
    const Topology topo = load_topology(f->topology);
    const NsSchedule sched = ns_schedule(f->schedule);
    const NsCost c = ns_cost(topo, f->batch, f->rows, f->cols, sched, f->symmetric);
    if (f->json) {
      const nlohmann::json j = ns_cost_to_json(c);
      std::cout << j.dump(2) << "\n";
      return 0;
    }
    std::printf("NS %lld x [%lld, %lld], %s (%d iterations) on %s:\n", (long long)f->batch,
                (long long)f->rows, (long long)f->cols, sched.name.c_str(), c.iterations,
                topo.node.gpu.name.c_str());
    std::printf("  %.3f ms  (%.3g FLOP, %.0f TFLOP/s)\n", c.total_s * 1e3, c.flops,
                c.flops / c.total_s / 1e12);
    std::printf("  normalize %.3f ms + %d x (", c.normalize_s * 1e3, c.iterations);
    for (size_t i = 0; i < c.gemms.size(); ++i) {
      const GemmCost& g = c.gemms[i];
      std::printf("%s%s %.3f ms [waves %.2f, K %.2f, %s]", i ? " + " : "", g.what.c_str(),
                  g.total_s * 1e3, g.wave_efficiency, g.k_efficiency,
                  g.compute_s >= g.memory_s ? "compute" : "memory");
    }
    std::printf(")\n");
    return 0;
  };
}

}  // namespace muonplan::cli
