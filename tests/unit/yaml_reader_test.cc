// The YAML reader every YAML format goes through (muonplan/planner/yaml_reader.h): a key given
// twice is refused naming both lines (yaml-cpp looks up the first silently), and aliases are walked
// once.
#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <string>

#include "muonplan/base/error.h"
#include "muonplan/planner/model_io.h"
#include "muonplan/planner/plan.h"
#include "muonplan/planner/workload.h"
#include "test_paths.h"

using namespace muonplan;
using test::error_of;
using test::TempFile;

TEST_CASE("duplicate keys in our YAML formats are refused naming both lines", "[yaml_reader]") {
  std::ifstream in(repo_path("models/tiny-dense.yaml"));
  std::string model((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // yaml-cpp looks up the first: hidden_size 250 planned, 300 ignored.
  std::string dup = model;
  dup.replace(dup.find("num_layers: 5"), 13, "num_layers: 5\nnum_layers: 7");
  CHECK(error_of([&] { parse_model_yaml(dup, "m.yaml"); }) ==
        "m.yaml:10:1: num_layers: given twice, at lines 9 and 10");
  std::string nested = model;
  nested.replace(nested.find("  qk_norm: true"), 14, "  qk_norm: true\n  qk_norm: false");
  CHECK(error_of([&] { parse_model_yaml(nested, "m.yaml"); }) ==
        "m.yaml:15:3: attention.qk_norm: given twice, at lines 14 and 15");
  // Aliases are walked once each: a document of nested aliases stays linear.
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'z'; ++c) {
    laughs += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) laughs += std::string(i ? ", " : "") + "*" + char(c - 1);
    laughs += "]\n";
  }
  CHECK(error_of([&] { parse_model_yaml(laughs, "l.yaml"); }).find("l.yaml") == 0);

  std::ifstream tin(repo_path("topologies/cpu-ci.yaml"));
  std::string topo((std::istreambuf_iterator<char>(tin)), std::istreambuf_iterator<char>());
  const size_t at = topo.find("max_nodes:");
  REQUIRE(at != std::string::npos);
  topo.insert(at, "max_nodes: 64\n");
  CHECK(error_of([&] {
          parse_topology(topo, "t.yaml");
        }).find(": max_nodes: given twice, at lines ") != std::string::npos);

  const TempFile w("findings_dup_workload.yaml",
                   "tokens_per_step: 1048576\nseq_len: 4096\nseq_len: 8192\n");
  CHECK(error_of([&] { load_workload(w.path); }) ==
        w.path + ":3:1: seq_len: given twice, at lines 2 and 3");
}
