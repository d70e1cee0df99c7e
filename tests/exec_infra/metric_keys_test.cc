// One table of figure names (metric_keys.h) for plan.json's `predicted`, metrics.json's
// `predicted` and its `measured`: the writers and readers of each side use every key of it, so
// a prediction and its measurement cannot drift apart by a typo.
#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "muonplan/exec/metrics.h"
#include "muonplan/planfile/metric_keys.h"
#include "muonplan/planfile/plan_checks.h"
#include "muonplan/planner/plan.h"
#include "test_plans.h"

using namespace muonplan;
using json = nlohmann::json;

namespace {

std::set<std::string> keys_of(const json& j) {
  std::set<std::string> out;
  for (const auto& [k, v] : j.items()) out.insert(k);
  return out;
}

std::set<std::string> table_names() {
  std::set<std::string> out;
  for (const PredictedFigureKey& f : kPredictedFigureKeys) out.insert(f.name);
  return out;
}

// read_plan_predicted's one-line message for a plan whose `predicted` is `predicted`.
std::string read_error(const json& predicted) {
  return test::error_of(
      [&] {
        read_plan_predicted({{"predicted", predicted}}, "plan.json");
      },
      "(accepted)");
}

}  // namespace

TEST_CASE("the figures' table names each figure once, and each member once", "[metric_keys]") {
  std::set<std::string> names;
  const PredictedFigures probe;
  std::set<const void*> members;  // where in a PredictedFigures each entry points
  for (const PredictedFigureKey& f : kPredictedFigureKeys) {
    CHECK(names.insert(f.name).second);
    CHECK(members.insert(&(probe.*(f.member))).second);
  }
  CHECK(members.size() == sizeof(PredictedFigures) / sizeof(std::optional<double>));
}

TEST_CASE("the plan file's `predicted` is the table's figures, and reads back to the same",
          "[metric_keys]") {
  const json plan = test::tiny_plan();
  json want = plan["predicted"];
  CHECK(want.contains(metric::kBreakdown));
  want.erase(metric::kBreakdown);
  CHECK(keys_of(want) == table_names());
  // What execute writes into the metrics: the plan's figures, every digit.
  CHECK(figures_to_json(read_plan_predicted(plan, "plan.json")) == want);
}

TEST_CASE("every figure round-trips through the metrics' `predicted`", "[metric_keys]") {
  PredictedFigures f;
  double v = 1;
  for (const PredictedFigureKey& k : kPredictedFigureKeys) f.*(k.member) = v++;
  const json j = figures_to_json(f);
  CHECK(keys_of(j) == table_names());
  const PredictedFigures back = read_plan_predicted({{"predicted", j}}, "plan.json");
  v = 1;
  for (const PredictedFigureKey& k : kPredictedFigureKeys) {
    CHECK(j[k.name] == v);
    CHECK(back.*(k.member) == v++);
  }
  // Unset figures are null in the metrics, and null reads back unset.
  const json none = figures_to_json(PredictedFigures{});
  for (const PredictedFigureKey& k : kPredictedFigureKeys) CHECK(none[k.name].is_null());
  CHECK(figures_to_json(read_plan_predicted(json::object(), "plan.json")) == none);
  CHECK(figures_to_json(read_plan_predicted({{"predicted", none}}, "plan.json")) == none);
}

TEST_CASE("measured figures carry their prediction's names", "[metric_keys]") {
  exec::Measured m;
  m.state_digest = "0123456789abcdef";
  m.gemm_path = "onednn";
  m.openblas_core = "SkylakeX";
  const json measured = exec::to_json(m);
  // Where no OpenBLAS GEMM ran (cuda), its kernel is not named.
  m.gemm_path = "cublas";
  m.openblas_core.clear();
  CHECK_FALSE(exec::to_json(m).contains(metric::kOpenblasCore));
  // The measured keys that are also figures of the plan are exactly the shared ones.
  std::set<std::string> shared;
  for (const std::string& k : keys_of(measured)) {
    if (table_names().count(k)) shared.insert(k);
  }
  CHECK(shared == std::set<std::string>(std::begin(metric::kShared), std::end(metric::kShared)));
  // The readers (report, calibrate) accept what the writers write.
  const json metrics = {
      {"schema", kMetricsSchema},
      {"measured", measured},
      {"predicted", figures_to_json(read_plan_predicted(test::tiny_plan(), "p"))}};
  CHECK(test::error_of([&] { check_metrics(metrics, "m.json"); }, "(accepted)") == "(accepted)");
  // Each measured string is one check_metrics takes for a string.
  for (const char* key : metric::kMeasuredStrings) {
    CHECK(measured[key].is_string());
    json bad = metrics;
    bad["measured"][key] = 1;
    CHECK(test::error_of([&] { check_metrics(bad, "m.json"); }, "(accepted)") ==
          std::string("m.json: measured.") + key + ": expected a string, got 1");
  }
}

TEST_CASE(
    "a plan's `predicted` with an unknown or ill-typed figure is refused alike by the "
    "loader and by execute's reader",
    "[metric_keys]") {
  const json plan = test::tiny_plan();
  auto both = [&](const std::string& key, const json& value) {
    json p = plan["predicted"];
    p[key] = value;
    const std::string loader = test::plan_error_after(plan, [&](json& j) { j["predicted"] = p; });
    CHECK(loader == read_error(p));
    return loader;
  };
  CHECK(both("gpu_peak_gb", 1.0) ==
        "plan.json: predicted.gpu_peak_gb: unknown key (muonplan plan does not write it)");
  CHECK(both(metric::kGpuPeakGib, "many") ==
        "plan.json: predicted.gpu_peak_gib: expected a number, got \"many\"");
  CHECK(both(metric::kGpuPeakGib, json{{"gib", 1}}) ==
        "plan.json: predicted.gpu_peak_gib: expected a number, got an object of 1 keys");
  CHECK(both(metric::kGpuPeakGib, json::array({1, 2})) ==
        "plan.json: predicted.gpu_peak_gib: expected a number, got [1,2]");
  CHECK(both(metric::kOptimizerStepS, -5) ==
        "plan.json: predicted.optimizer_step_s: expected a number in [0, 1e18], got -5");
  CHECK(both(metric::kOptimizerStepS, nullptr) == "(accepted)");
  // The breakdown is the plan's own: not a figure, not copied.
  CHECK(read_error({{metric::kBreakdown, {{"x", "y"}}}}) == "(accepted)");
}
