// The roofline's operation classes (planner/src/cost/roofline_ops.h): one row per class in
// OpClass's order, and formula text built from the numbers the code computes with.
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <vector>

#include "cost/roofline_ops.h"
#include "test_paths.h"

using namespace muonplan;
using namespace muonplan::roofline_ops;

TEST_CASE("each operation class's row: its name and a formula from the code's numbers",
          "[roofline]") {
  const RooflineShape full;
  for (int k = 0; k < kClasses; ++k) {
    CHECK(kOpClasses[k].id == k);
    CHECK(!kOpClasses[k].formula(full).empty());
  }
  CHECK(std::string(kOpClasses[gemm].name) == "gemm");
  CHECK(std::string(kOpClasses[expert_loop].name) == "expert_loop");
  // The eager loop's ops per expert: forward 36 (again in an AC layer's recompute), backward
  // 50 (the text once said 122 whatever the AC).
  CHECK(kOpClasses[expert_loop].formula(full).find(" 36 ops per expert forward") !=
        std::string::npos);
  CHECK(kOpClasses[expert_loop].formula(full).find(" and 50 backward") != std::string::npos);
  CHECK(kOpClasses[attention].formula(full).find("2.5x backward") != std::string::npos);
  CHECK(kOpClasses[lm_head_loss].formula(full).find("(48 B forward, 46 B backward") !=
        std::string::npos);
  CHECK(kOpClasses[fsdp_copies].formula(full).find("copy-out (4 B per gathered element") !=
        std::string::npos);
  CHECK(kOpClasses[fsdp_copies].formula(full).find("copy-in (2 + reduce_dtype B") !=
        std::string::npos);
  CHECK(kOpClasses[moe_routing].formula(full).find("(18 E + 84 top_k + 30 top_k h + 2 h)") !=
        std::string::npos);
}

// docs/planner.md's table of operation classes ("| class | operations | rate |") names the
// classes the roofline prints, in its order (issue 47 item 5: a doc table tested against its
// code table).
TEST_CASE("docs/planner.md's operation classes are kOpClasses", "[roofline]") {
  std::ifstream in(repo_path("docs/planner.md"));
  REQUIRE(in);
  std::vector<std::string> documented;
  bool inside = false;
  const std::regex row("^\\| `([a-z_]+)` \\|");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| class | operations | rate |", 0) == 0) {
      inside = true;
      continue;
    }
    if (!inside || line.rfind("| ---", 0) == 0) continue;
    std::smatch m;
    if (!std::regex_search(line, m, row)) break;  // the table's end
    documented.push_back(m[1]);
  }
  std::vector<std::string> code;
  for (const OpClassRow& r : kOpClasses) code.push_back(r.name);
  CHECK(documented == code);
}
