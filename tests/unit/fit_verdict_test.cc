// The three fit verdicts (Prediction::fit_verdict): fits within the headroom, tight within the
// limits only, does not fit past a limit; figures worked by hand.
#include <catch2/catch.hpp>

#include "muonplan/base/units.h"
#include "muonplan/planfile/prediction.h"

using namespace muonplan;

TEST_CASE("fit verdict: fits, tight by how much, does not fit", "[prediction]") {
  Prediction p;
  p.gpu_limit_bytes = 80 * kGiB;
  p.host_limit_bytes = 1000 * kGiB;
  p.gpu_headroom = 0.05;  // usable: 76 GiB
  p.host_headroom = 0.05;
  p.host_bytes_per_node = {{"host", 100 * kGiB, ""}};
  p.gpu_persistent_bytes = {{"state", 75 * kGiB, ""}};
  CHECK(p.fit_verdict() == Prediction::Verdict::fits);
  CHECK(p.gpu_headroom_used_bytes() == 0);
  // 78 GiB: within the card's 80, 2 GiB into the 4 GiB headroom.
  p.gpu_persistent_bytes = {{"state", 78 * kGiB, ""}};
  CHECK(p.fit_verdict() == Prediction::Verdict::tight);
  CHECK_FALSE(p.fits());
  CHECK(p.gpu_headroom_used_bytes() == Approx(2 * kGiB));
  // 81 GiB: past the card.
  p.gpu_persistent_bytes = {{"state", 81 * kGiB, ""}};
  CHECK(p.fit_verdict() == Prediction::Verdict::does_not_fit);
  // Host RAM counts the same way: the GPU fits, host RAM inside its headroom.
  p.gpu_persistent_bytes = {{"state", 75 * kGiB, ""}};
  p.host_bytes_per_node = {{"host", 990 * kGiB, ""}};
  CHECK(p.fit_verdict() == Prediction::Verdict::tight);
  CHECK(std::string(to_string(p.fit_verdict())) == "tight");
}
