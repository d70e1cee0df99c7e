// plan_from_json is plan_to_json's inverse for what the executor runs, and bad plans are
// refused with one line naming the file and the field.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

#include "muonplan/base/error.h"
#include "muonplan/planner/model_io.h"
#include "muonplan/planner/owners.h"
#include "muonplan/planner/plan.h"
#include "test_plans.h"

using namespace muonplan;
using json = nlohmann::json;
using test::plan_error_after;

namespace {

Plan plan_for(const std::string& model, const std::string& topo, int nodes, int gpus_per_node,
              OwnerStrategy owners, const std::string& layout = "") {
  PlanRequest r;
  r.options.nodes = nodes;
  r.options.gpus_per_node = gpus_per_node;
  r.options.owners = owners;
  if (!layout.empty()) r.options.layout = parse_layout(layout);
  return make_plan(test::model(model), test::topology(topo), r);
}

// Predictions depend on the topology, which a plan names but does not hold: not read back
// (the chunks' NS times are: the file carries them).
json without_predictions(json j) {
  j.erase("predicted");
  return j;
}

void check_round_trip(const Plan& plan) {
  const json first = plan_to_json(plan);
  const Plan loaded = plan_from_json(first, "plan.json");
  CHECK(without_predictions(plan_to_json(loaded)) == without_predictions(first));
  CHECK(loaded.shards == plan.shards);
  CHECK(loaded.batches_in_flight == plan.batches_in_flight);
  // The loader computes no loads (a planner figure); the planner gets the same from the file's
  // chunks as from its own.
  CHECK(loaded.chunks.loads.alltoall_bytes.empty());
  const RankLoads again = compute_loads(loaded.inventory, loaded.chunks,
                                        static_cast<int>(loaded.options.schedule.steps.size()));
  CHECK(again.alltoall_bytes == plan.chunks.loads.alltoall_bytes);
  CHECK(again.ns_flops == plan.chunks.loads.ns_flops);
  REQUIRE(loaded.chunks.chunks.size() == plan.chunks.chunks.size());
  for (size_t i = 0; i < plan.chunks.chunks.size(); ++i) {
    CHECK(loaded.chunks.chunks[i].local == plan.chunks.chunks[i].local);
  }
}

// plan_from_json's one-line message for a tiny-dense plan on 3 ranks edited by `edit`.
std::string error_after(const std::function<void(json&)>& edit) {
  return plan_error_after(
      plan_to_json(plan_for("tiny-dense", "cpu-ci", 1, 3, OwnerStrategy::round_robin)), edit);
}

json& tensor_named(json& j, const std::string& name) {
  for (json& t : j["tensors"]) {
    if (t["name"] == name) return t;
  }
  FAIL("no tensor " << name);
  return j;
}

}  // namespace

TEST_CASE("plans round-trip through JSON", "[plan_load]") {
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

TEST_CASE("the loaded plan carries the options the executor runs", "[plan_load]") {
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
  // Where `optimizer` offload keeps its state (the planner's PCIe rate assumed it): pageable
  // unless pinned; RankState allocates it so.
  CHECK_FALSE(q.options.pinned_host_state);
  r.options.pinned_host_state = true;
  const Plan pinned =
      plan_from_json(plan_to_json(make_plan(load_model(repo_path("models/tiny-moe.yaml")),
                                            load_topology(repo_path("topologies/cpu-ci.yaml")), r)),
                     "plan.json");
  CHECK(pinned.options.pinned_host_state);
}

TEST_CASE("bad plans are refused naming the file and the field", "[plan_load]") {
  CHECK(error_after([](json& j) { j["schema"] = "muonplan.plan/3"; }) ==
        "plan.json: schema: expected muonplan.plan/2, got 'muonplan.plan/3'");
  CHECK(error_after([](json& j) { j["schema"] = "muonplan.plan/1"; }) ==
        "plan.json: schema: expected muonplan.plan/2, got 'muonplan.plan/1' (written by an older "
        "muonplan: plan again, or upgrade it with scripts/upgrade-plan-v1.py)");
  CHECK(error_after([](json& j) { j.erase("schema"); }) ==
        "plan.json: schema: expected muonplan.plan/2, got ''");
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
  // Two matrices of one batch on one rank: the step would orthogonalize only one of them.
  CHECK(error_after([](json& j) {
          REQUIRE(j["chunks"][0]["owners"].size() >= 2);
          j["chunks"][0]["owners"][1] = j["chunks"][0]["owners"][0];
        }).find("plan.json: chunks[0].owners[1]: group position ") == 0);
  CHECK(error_after([](json& j) {
          j["chunks"].erase(0);
        }).find("plan.json: chunks: tensor 'model.layers.0.self_attn.") == 0);
  CHECK(error_after([](json& j) { j["tensors"][0]["shape"] = {0}; }) ==
        "plan.json: tensors[0].shape[0]: expected an integer in [1, 100000000], got 0");
}

TEST_CASE("batches_in_flight is the offload policy's, or the plan is refused", "[plan_load]") {
  // tiny-dense on 3 ranks, offload none: the policy runs 3 batches in flight.
  CHECK(error_after([](json& j) { j["optimizer_config"]["batches_in_flight"] = 2; }) ==
        "plan.json: optimizer_config.batches_in_flight: expected 3, the offload policy's for none "
        "with whole staging (the prediction assumed it), got 2");
}

TEST_CASE("tensors' shard rules are read and checked against the tensor and the layout",
          "[plan_load]") {
  // tiny-dense on 3 ranks, fsdp=3: every tensor row_sharded over 3.
  CHECK(error_after([](json& j) { j["tensors"][0].erase("shard"); }) ==
        "plan.json: tensors[0].shard: missing");
  CHECK(error_after([](json& j) { j["tensors"][0]["shard"]["group_size"] = 1; }) ==
        "plan.json: tensors[0].shard.group_size: expected the layout's fsdp 3");
  CHECK(error_after([](json& j) {
          j["tensors"][0]["shard"] = {{"kind", "replicated"}};
        }) ==
        "plan.json: tensors[0].shard.kind: expected row_sharded for 'model.embed_tokens.weight' "
        "under fsdp=3,cp=1,ep=1");
  CHECK(error_after([](json& j) { j["tensors"][0]["shard"]["kind"] = "stack_sharded"; }) ==
        "plan.json: tensors[0].shard.kind: expected row_sharded for "
        "'model.embed_tokens.weight' under fsdp=3,cp=1,ep=1");
  CHECK(error_after([](json& j) { j["tensors"][0]["shard"]["ep"] = 1; }) ==
        "plan.json: tensors[0].shard.ep: unknown key (muonplan plan does not write it)");
  // tiny-moe on 4 ranks, ep=2: expert stacks over ep 2 x dp 2.
  const json moe =
      plan_to_json(plan_for("tiny-moe", "cpu-ci", 1, 4, OwnerStrategy::balanced, "fsdp=4,ep=2"));
  int stack = -1;
  for (size_t i = 0; i < moe["tensors"].size() && stack < 0; ++i)
    if (moe["tensors"][i]["stack_dim"] == 0) stack = int(i);
  REQUIRE(stack >= 0);
  CHECK(moe["tensors"][stack]["shard"] == json{{"kind", "stack_sharded"}, {"ep", 2}, {"dp", 2}});
  const std::string at = "plan.json: tensors[" + std::to_string(stack) + "].shard.";
  CHECK(plan_error_after(moe, [&](json& j) { j["tensors"][stack]["shard"]["dp"] = 4; }) ==
        at + "dp: expected the layout's fsdp / ep = 2");
  CHECK(plan_error_after(moe, [&](json& j) { j["tensors"][stack]["shard"]["ep"] = 4; }) ==
        at + "ep: expected the layout's ep 2");
  CHECK(plan_error_after(
            moe,
            [&](json& j) {
              j["tensors"][stack]["shard"] = {{"kind", "row_sharded"}, {"group_size", 4}};
            }) == at + "kind: expected stack_sharded for '" +
                      moe["tensors"][stack]["name"].get<std::string>() +
                      "' under fsdp=4,cp=1,ep=2");
  // A batch member cannot be declared replicated while the layout shards it.
  CHECK(plan_error_after(moe, [&](json& j) {
          const std::string first = j["chunks"][0]["matrices"][0]["tensor"];
          tensor_named(j, first)["shard"] = {{"kind", "replicated"}};
        }).find("shard.kind: expected row_sharded for '") != std::string::npos);
}

TEST_CASE("load_plan reports unreadable files and malformed JSON with a position", "[plan_load]") {
  CHECK_THROWS_WITH(load_plan("/nonexistent/plan.json"),
                    "/nonexistent/plan.json: file: cannot be read");
  const std::string path = "exec_infra_bad_plan.json";
  std::ofstream(path) << "{\n  \"schema\": \"muonplan.plan/2\",\n  \"nodes\": ,\n}\n";
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

// Regression tests for what fuzzing the loaders found (docs/fuzzing-and-sanitizers.md) and a
// hostile-input review (docs/reliability.md): each plan used to crash, overflow, allocate
// without bound or load silently, and is now an InputError with one line.
TEST_CASE("a number too large for a double in a plan is a located JSON error", "[plan_load]") {
  const test::TempFile f("fuzz_finding_plan.json",
                         "{\"schema\": \"muonplan.plan/2\", \"nodes\": 1e400}\n");
  CHECK_THROWS_WITH(load_plan(f.path), f.path + ": json: number overflow parsing '1e400'");
}

TEST_CASE("a plan's world and sizes are bounded before anything is allocated", "[plan_load]") {
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

TEST_CASE("integers past INT64_MAX in a plan are refused as written", "[plan_load]") {
  CHECK(plan_error_after([](json& j) { j["nodes"] = UINT64_MAX; }) ==
        "plan.json: nodes: expected an integer below 2^63, got 18446744073709551615");
}

TEST_CASE("plan values the executor would trip on are refused at load", "[plan_load]") {
  // inf and nan were written as null by earlier planners.
  CHECK(plan_error_after([](json& j) { j["optimizer_config"]["lr"] = nullptr; }) ==
        "plan.json: optimizer_config.lr: expected a number, got null");
  CHECK(plan_error_after([](json& j) { j["optimizer_config"]["adamw"]["beta2"] = 1; }) ==
        "plan.json: optimizer_config.adamw.beta2: must be in [0, 1), got 1");
  CHECK(plan_error_after([](json& j) { j["optimizer_config"]["adamw"]["eps"] = 0; }) ==
        "plan.json: optimizer_config.adamw.eps: must be a finite number > 0, got 0");
  CHECK(plan_error_after([](json& j) { j["optimizer_config"]["ns_norm_scale"] = -1; }) ==
        "plan.json: optimizer_config.ns_norm_scale: must be a finite number > 0, got -1");
  // A shape of [1000, 10^9] was a std::bad_alloc in the executor.
  CHECK(plan_error_after([](json& j) {
          j["tensors"][0]["shape"] = {1000, 1000000000};
        }) ==
        "plan.json: tensors[0].shape[1]: expected an integer in [1, 100000000], got 1000000000");
}

TEST_CASE("keys plan_to_json does not write are refused", "[plan_load]") {
  CHECK(plan_error_after([](json& j) { j["lr"] = 0.1; }) ==
        "plan.json: lr: unknown key (muonplan plan does not write it)");
  CHECK(plan_error_after([](json& j) { j["optimizer_config"]["momentun"] = 0.9; }) ==
        "plan.json: optimizer_config.momentun: unknown key (muonplan plan does not write it)");
  CHECK(plan_error_after([](json& j) { j["optimizer_config"]["adamw"]["beta3"] = 0.9; }) ==
        "plan.json: optimizer_config.adamw.beta3: unknown key (muonplan plan does not write it)");
  CHECK(plan_error_after([](json& j) { j["chunks"][0]["owner"] = {0}; }) ==
        "plan.json: chunks[0].owner: unknown key (muonplan plan does not write it)");
  CHECK(plan_error_after([](json& j) { j["tensors"][1]["dtype"] = "f32"; }) ==
        "plan.json: tensors[1].dtype: unknown key (muonplan plan does not write it)");
  CHECK(plan_error_after([](json& j) { j["layout"]["tp"] = 2; }) ==
        "plan.json: layout.tp: unknown key (muonplan plan does not write it)");
  CHECK(plan_error_after([](json&) {}) == "(accepted)");
}
