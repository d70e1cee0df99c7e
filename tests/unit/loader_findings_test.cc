// Regression tests for what fuzzing the loaders found (docs/fuzzing-and-sanitizers.md): each
// input used to crash, overflow or allocate without bound, and is now an InputError. Bad model
// files that `muonplan inspect` refuses live in tests/data/bad/model/ instead.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>

#include "muonplan/error.h"
#include "muonplan/model_io.h"
#include "muonplan/plan.h"
#include "test_paths.h"

using namespace muonplan;
using json = nlohmann::json;

namespace {

// plan_from_json's one-line message for a tiny-dense plan on one rank, edited by `edit`.
std::string plan_error_after(const std::function<void(json&)>& edit) {
  PlanRequest r;
  r.options.nodes = 1;
  r.options.gpus_per_node = 1;
  json j = plan_to_json(make_plan(load_model(repo_path("models/tiny-dense.yaml")),
                                  load_topology(repo_path("topologies/cpu-ci.yaml")), r));
  edit(j);
  try {
    plan_from_json(j, "plan.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

json& tensor_named(json& j, const std::string& name) {
  for (json& t : j["tensors"]) {
    if (t["name"] == name) return t;
  }
  FAIL("no tensor " << name);
  return j;
}

}  // namespace

TEST_CASE("a number too large for a double is a located JSON error, not a crash", "[fuzz]") {
  // nlohmann throws out_of_range (406) for it, not parse_error.
  CHECK_THROWS_WITH(parse_hf_config("{\"model_type\": \"llama\", \"vocab_size\": 1e400}", "c.json"),
                    "c.json: json: number overflow parsing '1e400'");
  const std::string path = "fuzz_finding_plan.json";
  std::ofstream(path) << "{\"schema\": \"muonplan.plan/1\", \"nodes\": 1e400}\n";
  CHECK_THROWS_WITH(load_plan(path), path + ": json: number overflow parsing '1e400'");
  std::remove(path.c_str());
}

TEST_CASE("element counts beyond int64 are refused, not wrapped", "[fuzz]") {
  // [1e5, 1e8, 1e8] expert stacks: every field within its bound, the product past 2^63.
  const std::string yaml =
      "name: x\nvocab_size: 10\nhidden_size: 100000000\nnum_layers: 1\n"
      "attention:\n  num_heads: 1\nmoe:\n  num_experts: 100000\n  intermediate_size: 100000000\n";
  CHECK_THROWS_WITH(parse_model_yaml(yaml, "x.yaml"),
                    "x.yaml: model: 3000040010T parameters, more than muonplan plans for (1000T)");
}

TEST_CASE("a plan's world and sizes are bounded before anything is allocated", "[fuzz]") {
  // 1e9 ranks: per-rank tables of 8 GB before the fix.
  CHECK(plan_error_after([](json& j) {
          j["nodes"] = 1000000;
          j["gpus_per_node"] = 1000;
          j["world_size"] = 1000000000;
        }) == "plan.json: world_size: expected an integer in [1, 131072], got 1000000000");
  // An embedding of 2^63-1 rows used to load and reach the executor with a wrapped numel();
  // every dimension is now bounded as the model loaders bound them.
  CHECK(plan_error_after([](json& j) {
          tensor_named(j, "model.embed_tokens.weight")["shape"] = {INT64_MAX, 2};
        }) ==
        "plan.json: tensors[0].shape[0]: expected an integer in [1, 100000000], got "
        "9223372036854775807");
  CHECK(plan_error_after([](json& j) {
          tensor_named(j, "model.embed_tokens.weight")["shape"] = {100000000, 100000000};
        }) ==
        "plan.json: tensors[0].shape: [100000000,100000000] brings the model past 1e15 "
        "parameters, more than muonplan plans for");
  // Partition rows whose sum overflows int64 are refused as rows that do not add up.
  CHECK(plan_error_after([](json& j) {
          json& t = tensor_named(j, "model.layers.0.mlp.gate_up_proj.weight");
          t["partitions"][0]["rows"] = INT64_MAX;
          t["partitions"][1]["rows"] = INT64_MAX;
        }).find("partitions: partition rows must add up to the matrix rows") != std::string::npos);
}

TEST_CASE("integers past INT64_MAX are refused as written, not wrapped negative", "[fuzz]") {
  // nlohmann holds them unsigned; get<int64_t> made 2^64-1 read as -1 ("must be positive").
  CHECK_THROWS_WITH(
      parse_hf_config("{\"model_type\": \"llama\", \"vocab_size\": 18446744073709551615}",
                      "c.json"),
      "c.json:1:25: vocab_size: is 18446744073709551615, more than muonplan plans for (100000000)");
  CHECK(plan_error_after([](json& j) { j["nodes"] = UINT64_MAX; }) ==
        "plan.json: nodes: expected an integer below 2^63, got 18446744073709551615");
}
