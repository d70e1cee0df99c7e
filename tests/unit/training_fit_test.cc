// What calibrate's fit relies on (training_run.h): each constant it may fit moves only the
// figures it says it moves, on every bundled training run, so the search over it may leave the
// others out (and, when gpu_peak_gib is among them, the allocator replay); and a prediction
// without the replay gives every other figure bit-identical.
#include <algorithm>
#include <filesystem>

#include <catch2/catch.hpp>

#include "muonplan/planner/topology.h"
#include "muonplan/tools/training_run.h"
#include "test_paths.h"

using namespace muonplan;

namespace {

// Each bundled run on the topology it was measured on (its `topology:`; the GLM run: h200-ib).
std::vector<std::pair<TrainingRun, Topology>> bundled_runs() {
  std::vector<std::string> files;
  // The run files beside each other; matrix/ (prime-rl's benchmark matrix) is validation's.
  for (const auto& e : std::filesystem::directory_iterator(repo_path("tests/data/training-runs")))
    if (e.is_regular_file()) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  std::vector<std::pair<TrainingRun, Topology>> runs;
  for (const std::string& f : files) {
    for (const char* name : {"h200-ib", "h100-ib", "b200-ib", "rtx-a6000"}) {
      const Topology t = load_topology(name);
      TrainingRun r = load_training_run(f, t);
      if (r.skipped.empty()) {
        runs.emplace_back(r, t);
        break;
      }
    }
  }
  return runs;
}

}  // namespace

TEST_CASE("each fitted constant moves only the figures the fit searches it on", "[calibrate]") {
  const auto runs = bundled_runs();
  REQUIRE(runs.size() == 7);
  const std::vector<FitConstant> constants = fit_constants();
  REQUIRE(constants.size() == 9);  // the step's 4 (GEMM, 3 attention kernels), 2, 2, 1
  int moved = 0;
  for (const auto& [r, topo] : runs) {
    const auto base = predicted_figures(topo, r);
    REQUIRE(base.size() == 4);
    // Without the replay: the same figures but gpu_peak_gib, to the bit.
    const auto partial = predicted_figures(topo, r, false);
    CHECK(partial.count("gpu_peak_gib") == 0);
    for (const auto& [name, v] : partial) {
      INFO(r.name << " " << name);
      CHECK(v == base.at(name));
    }
    for (const FitConstant& c : constants) {
      Topology t = topo;
      double& v = c.field(t);
      // A value within the bounds well away from the shipped one.
      v = v - c.lo < (c.hi - c.lo) / 2 ? c.hi - 0.1 * (c.hi - c.lo) : c.lo + 0.1 * (c.hi - c.lo);
      const auto now = predicted_figures(t, r);
      for (const auto& [name, value] : now) {
        const bool listed = std::count(c.moves.begin(), c.moves.end(), name) > 0;
        INFO(r.name << ": " << c.name << " = " << v << ", " << name << " " << base.at(name)
                    << " -> " << value);
        if (!listed) CHECK(value == base.at(name));
        moved += listed && value != base.at(name);
      }
    }
  }
  // The constants do move what they list (else the check above proves nothing).
  CHECK(moved >= 20);
}
