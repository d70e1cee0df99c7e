// Planning speed: Kimi-K2 (1.03T params) with --nodes auto --offload auto on the default
// topology, beside one fixed-node plan measured in the same run (the ratio is what to track;
// absolute times vary with the machine). Usage: plan_bench [reps]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "muonplan/model_io.h"
#include "muonplan/plan.h"

using namespace muonplan;

namespace {

template <class F>
double median_ms(int reps, F&& f) {
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  const std::string root = MUONPLAN_SOURCE_DIR;
  const ModelSpec spec = load_model(root + "/models/kimi-k2.yaml");
  const Topology topo = load_topology(root + "/topologies/h200-ib.yaml");
  PlanRequest automatic;
  automatic.auto_nodes = automatic.auto_offload = true;
  PlanRequest fixed;
  fixed.options.nodes = 8;
  fixed.options.offload = OffloadMode::full;
  int nodes = 0;
  const double auto_ms = median_ms(reps, [&] { nodes = make_plan(spec, topo, automatic).options.nodes; });
  const double fixed_ms = median_ms(reps, [&] { make_plan(spec, topo, fixed); });
  std::printf("{\"bench\": \"plan\", \"model\": \"kimi-k2\", \"chosen_nodes\": %d, "
              "\"auto_ms\": %.2f, \"fixed_ms\": %.2f, \"auto_over_fixed\": %.2f}\n",
              nodes, auto_ms, fixed_ms, auto_ms / fixed_ms);
  return 0;
}
