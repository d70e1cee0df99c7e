// plan_from_json is plan_to_json's inverse for what the executor runs, and bad plans are
// refused with one line naming the file and the field.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

#include "muonplan/error.h"
#include "muonplan/model_io.h"
#include "muonplan/plan.h"
#include "test_paths.h"

using namespace muonplan;
using json = nlohmann::json;

namespace {

Plan plan_for(const std::string& model, const std::string& topo, int nodes, int gpus_per_node,
              OwnerStrategy owners, const std::string& layout = "") {
  PlanRequest r;
  r.options.nodes = nodes;
  r.options.gpus_per_node = gpus_per_node;
  r.options.owners = owners;
  if (!layout.empty()) r.options.layout = parse_layout(layout);
  return make_plan(load_model(repo_path("models/" + model + ".yaml")),
                   load_topology(repo_path("topologies/" + topo + ".yaml")), r);
}

// Predictions depend on the topology, which a plan names but does not hold: not read back.
json without_predictions(json j) {
  j.erase("predicted");
  for (json& c : j["chunks"]) c.erase("predicted_ns_ms");
  return j;
}

void check_round_trip(const Plan& plan) {
  const json first = plan_to_json(plan);
  const Plan loaded = plan_from_json(first, "plan.json");
  CHECK(without_predictions(plan_to_json(loaded)) == without_predictions(first));
  CHECK(loaded.chunks.loads.alltoall_bytes == plan.chunks.loads.alltoall_bytes);
  CHECK(loaded.chunks.loads.ns_flops == plan.chunks.loads.ns_flops);
  REQUIRE(loaded.chunks.chunks.size() == plan.chunks.chunks.size());
  for (size_t i = 0; i < plan.chunks.chunks.size(); ++i) {
    CHECK(loaded.chunks.chunks[i].local == plan.chunks.chunks[i].local);
  }
}

// plan_from_json's one-line message for a tiny-dense plan edited by `edit`.
std::string error_after(const std::function<void(json&)>& edit) {
  json j = plan_to_json(plan_for("tiny-dense", "cpu-ci", 1, 3, OwnerStrategy::round_robin));
  edit(j);
  try {
    plan_from_json(j, "plan.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("plans round-trip through JSON", "[exec-infra]") {
  for (const std::string model : {"tiny-dense", "tiny-moe"}) {
    for (int gpus : {3, 4, 8}) {
      for (OwnerStrategy s : {OwnerStrategy::padded, OwnerStrategy::restart,
                              OwnerStrategy::round_robin, OwnerStrategy::balanced}) {
        INFO(model << " on " << gpus << " ranks, owners " << to_string(s));
        check_round_trip(plan_for(model, "cpu-ci", 1, gpus, s));
      }
    }
  }
  SECTION("expert parallelism and HSDP") {
    check_round_trip(plan_for("tiny-moe", "cpu-ci", 1, 4, OwnerStrategy::balanced, "ep=2"));
    check_round_trip(plan_for("tiny-moe", "cpu-ci", 2, 4, OwnerStrategy::balanced, "fsdp=4,ep=4"));
    check_round_trip(plan_for("tiny-dense", "cpu-ci", 1, 4, OwnerStrategy::balanced, "fsdp=1"));
  }
  SECTION("a real MoE model on H200 nodes") {
    check_round_trip(plan_for("qwen3-30b-a3b", "h200-ib", 2, 0, OwnerStrategy::balanced, "ep=8"));
  }
}

TEST_CASE("the loaded plan carries the options the executor runs", "[exec-infra]") {
  PlanRequest r;
  r.options.gpus_per_node = 4;
  r.options.bf16_momentum = true;
  r.options.nesterov = true;
  r.options.schedule = ns_schedule("polar-express");
  r.options.hyper.lr = 0.01;
  r.options.offload = OffloadMode::optimizer;
  r.options.optimizer_staging = OffloadStaging::chunked;
  const Plan p = make_plan(load_model(repo_path("models/tiny-moe.yaml")),
                           load_topology(repo_path("topologies/cpu-ci.yaml")), r);
  const Plan q = plan_from_json(plan_to_json(p), "plan.json");
  CHECK(q.world == 4);
  CHECK(q.options.bf16_momentum);
  CHECK(q.options.nesterov);
  CHECK(q.options.offload == OffloadMode::optimizer);
  CHECK(q.options.optimizer_staging == OffloadStaging::chunked);
  CHECK(q.options.schedule.name == "polar-express");
  CHECK(q.options.schedule.norm_scale == 1.02);
  CHECK(q.options.schedule.steps.size() == 5);
  CHECK(q.options.schedule.steps[0].b == -22.48329);
  CHECK(q.options.hyper.lr == 0.01);
  CHECK(q.options.hyper.update_rms == 0.2);
  CHECK(q.inventory.tensors.size() == p.inventory.tensors.size());
}

TEST_CASE("bad plans are refused naming the file and the field", "[exec-infra]") {
  CHECK(error_after([](json& j) { j["schema"] = "muonplan.plan/2"; }) ==
        "plan.json: schema: expected muonplan.plan/1, got 'muonplan.plan/2'");
  CHECK(error_after([](json& j) { j.erase("schema"); }) ==
        "plan.json: schema: expected muonplan.plan/1, got ''");
  CHECK(error_after([](json& j) { j.erase("world_size"); }) == "plan.json: world_size: missing");
  CHECK(error_after([](json& j) { j["world_size"] = 4; }) ==
        "plan.json: world_size: expected nodes x gpus_per_node = 3, got 4");
  CHECK(error_after([](json& j) { j["layout"]["fsdp"] = 2; }) ==
        "plan.json: layout.fsdp: does not divide world_size 3");
  CHECK(error_after([](json& j) { j["offload"] = "auto"; }) ==
        "plan.json: offload: expected none, optimizer or full, got 'auto'");
  CHECK(error_after([](json& j) { j["optimizer_config"]["lr"] = "fast"; }) ==
        "plan.json: optimizer_config.lr: expected a number, got \"fast\"");
  CHECK(error_after([](json& j) { j["chunks"][0]["matrices"][0]["tensor"] = "nope"; }) ==
        "plan.json: chunks[0].matrices[0].tensor: unknown tensor 'nope'");
  CHECK(error_after([](json& j) { j["chunks"][0]["owners"][0] = 3; }) ==
        "plan.json: chunks[0].owners[0]: expected an integer in [0, 2], got 3");
  CHECK(error_after([](json& j) {
          j["chunks"].erase(0);
        }).find("plan.json: chunks: tensor 'model.layers.0.self_attn.") == 0);
  CHECK(error_after([](json& j) { j["tensors"][0]["shape"] = {0}; }) ==
        "plan.json: tensors[0].shape[0]: expected an integer in [1, 100000000], got 0");
}

TEST_CASE("load_plan reports unreadable files and malformed JSON with a position", "[exec-infra]") {
  CHECK_THROWS_WITH(load_plan("/nonexistent/plan.json"),
                    "/nonexistent/plan.json: file: cannot be read");
  const std::string path = "exec_infra_bad_plan.json";
  std::ofstream(path) << "{\n  \"schema\": \"muonplan.plan/1\",\n  \"nodes\": ,\n}\n";
  try {
    load_plan(path);
    FAIL("accepted malformed JSON");
  } catch (const InputError& e) {
    CHECK(e.loc().line == 3);
    CHECK(e.field() == "json");
    CHECK(std::string(e.what()).find(path + ":3:") == 0);
  }
  std::remove(path.c_str());
}
