// The planner against published H200 measurements (data/calibration/published.yaml):
// every figure it predicts lies within the tolerance the file gives.
#include <catch2/catch.hpp>

#include "muonplan/tools/validation.h"
#include "test_plans.h"

using namespace muonplan;
using test::h200;

TEST_CASE("predictions match the published H200 measurements within tolerance", "[validation]") {
  const std::vector<ValidationRow> rows =
      validate_published(repo_path("data/calibration/published.yaml"), repo_path("models"), h200());
  int checked = 0;
  for (const ValidationRow& r : rows) {
    INFO(r.figure << " " << r.setting << ": published " << r.published << ", predicted "
                  << r.predicted);
    CHECK(r.ok());
    checked += r.checked();
  }
  CHECK(checked == 3 + 2 * 4);  // three NS calls, two offload modes x four figures
}
