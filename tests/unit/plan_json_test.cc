// The plan file (plan_to_json, docs/cli-contract.md): its keys, and their values against the
// Plan it was written from, the topology and the model's inventory.
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "muonplan/base/error.h"
#include "muonplan/base/units.h"
#include "muonplan/planner/plan.h"
#include "test_plans.h"

using namespace muonplan;
using namespace muonplan::test;  // model, topology and plan helpers (test_plans.h)

TEST_CASE("plan JSON's units by hand: GiB are 2^30 bytes, GB 10^9, GPU-seconds world x step",
          "[plan_json]") {
  Plan plan = plan_fixed("tiny-moe", 1, OffloadMode::none);
  Prediction& p = plan.predicted;
  p.gpu_transient_bytes = {{"step_buffers", 536'870'912.0, ""}};  // 2^29: 0.5 GiB
  p.host_bytes_per_node = {{"runtime", 3'221'225'472.0, ""}};     // 3 x 2^30: 3 GiB
  p.alltoall_bytes_per_rank_max = 2'500'000'000;                  // 2.5 GB
  p.h2d_bytes_per_gpu = 1'250'000'000;                            // 1.25 GB
  p.optimizer_step_s = 0.75;
  const nlohmann::json jp = plan_to_json(plan)["predicted"];
  CHECK(jp["gpu_transient_gib"] == 0.5);
  CHECK(jp["host_ram_per_node_gib"] == 3.0);
  CHECK(jp["alltoall_gb_per_rank_max"] == 2.5);
  CHECK(jp["alltoall_bytes_per_rank_max"] == 2.5e9);
  CHECK(jp["h2d_gb_per_gpu"] == 1.25);
  CHECK(jp["optimizer_step_s"] == 0.75);
  CHECK(jp["gpu_seconds_per_step"] == 8 * 0.75);  // 8 GPUs
}

TEST_CASE("plan JSON carries the contract's keys and the plan's values", "[plan_json]") {
  const Plan plan = plan_fixed("tiny-moe", 1, OffloadMode::none);
  const Prediction& p = plan.predicted;
  const nlohmann::json j = plan_to_json(plan);
  CHECK(j["schema"] == "muonplan.plan/2");
  CHECK(j["model"] == "tiny-moe");
  CHECK(j["topology"] == "h200-ib");
  // One node of the topology's 8 GPUs, as asked.
  CHECK(j["nodes"] == 1);
  CHECK(j["gpus_per_node"] == 8);
  CHECK(j["world_size"] == 8);
  CHECK(plan.world == 8);
  CHECK(j["layout"] == nlohmann::json{{"fsdp", 8}, {"cp", 1}, {"ep", 1}});
  CHECK(j["offload"] == "none");
  CHECK(j["optimizer"] == "muon");
  CHECK(j["owners"] == "balanced");
  CHECK(j["fits"] == true);
  CHECK(j["workload"].is_null());
  // Limits: the topology's GPU memory and host RAM.
  const Topology topo = h200();
  CHECK(j["limits"]["gpu_memory_gib"] == topo.node.gpu.memory_gib);
  CHECK(j["limits"]["host_ram_per_node_gib"] == topo.node.host_ram_gib);
  // Predictions: present, and the step's figures as the Prediction holds them (the units are
  // checked by hand in the next test case).
  const nlohmann::json& jp = j["predicted"];
  CHECK(jp["gpu_peak_gib"].get<double>() > 0);
  CHECK(jp["alltoall_bytes_per_rank_max"].get<double>() > 0);  // 8 ranks exchange shards
  CHECK(jp["h2d_gb_per_gpu"] == 0);                            // nothing offloaded
  CHECK(jp["d2h_gb_per_gpu"] == 0);
  CHECK(jp["optimizer_step_s"] == p.optimizer_step_s);
  CHECK(jp["training_step_s"].is_null());  // no workload: the optimizer step alone
  // The breakdown lists every named term with its value in the unit its key names.
  const nlohmann::json& persistent = jp["breakdown"]["gpu_persistent_gib"];
  REQUIRE(persistent.size() == p.gpu_persistent_bytes.size());
  for (size_t i = 0; i < persistent.size(); ++i) {
    CHECK(persistent[i]["name"] == p.gpu_persistent_bytes[i].name);
    CHECK(persistent[i]["gib"] == Approx(p.gpu_persistent_bytes[i].value / double(1 << 30)));
  }
  // Chunks: one row per chunk of the plan, and together they update every parameter of the
  // model once. Muon batches hold `count` matrices of rows x cols, one per owner.
  REQUIRE(j["chunks"].size() == plan.chunks.chunks.size());
  const InventorySummary s = build_inventory(model("tiny-moe")).summarize();
  int64_t params = 0, muon_params = 0;
  std::map<std::string, int> kinds;
  for (size_t i = 0; i < plan.chunks.chunks.size(); ++i) {
    const Chunk& c = plan.chunks.chunks[i];
    const nlohmann::json& jc = j["chunks"][i];
    INFO("chunk " << i);
    CHECK(jc["kind"] == Chunk::kind_name(c.kind));
    CHECK(jc["rows"] == c.rows);
    CHECK(jc["cols"] == c.cols);
    CHECK(jc["params"] == c.params);
    params += jc["params"].get<int64_t>();
    ++kinds[jc["kind"].get<std::string>()];
    if (c.kind == Chunk::Kind::muon_batch) {
      muon_params += jc["params"].get<int64_t>();
      CHECK(jc["count"] == c.matrices.size());
      CHECK(jc["params"] == jc["count"].get<int64_t>() * c.rows * c.cols);
      CHECK(jc["owners"] == c.owners);
      CHECK(jc["shard_group"]["size"] == 8);
      CHECK(jc["matrices"].size() == c.matrices.size());
    } else if (c.kind == Chunk::Kind::adamw_group) {
      CHECK(jc["count"] == c.param_names.size());
      CHECK(jc["owners"].empty());
    }
  }
  CHECK(params == s.params_total);
  CHECK(kinds["adamw_group"] == 1);
  CHECK(muon_params <= s.params_muon);
  CHECK(muon_params > 0);
}

TEST_CASE("plan JSON: the runtime, its headroom and the fit margin round-trip", "[plan_json]") {
  PlanOptions o;
  o.runtime = RuntimeKind::pytorch;
  o.gpu_headroom = 0.1;
  const Plan plan = plan_fixed("tiny-moe", 1, OffloadMode::none, o);
  const nlohmann::json j = plan_to_json(plan);
  CHECK(j["runtime"] ==
        nlohmann::json{{"name", "pytorch"}, {"gpu_headroom", 0.1}, {"host_headroom", 0.05}});
  const nlohmann::json& jp = j["predicted"];
  const Prediction& p = plan.predicted;
  CHECK(jp["gpu_allocated_gib"] == p.gpu_allocated_bytes() / kGiB);
  CHECK(jp["gpu_reserved_gib"] == p.gpu_reserved_bytes() / kGiB);
  CHECK(jp["gpu_outside_allocator_gib"] == sum(p.gpu_fixed_bytes) / kGiB);
  CHECK(jp["fit_margin"] == p.fit_margin());
  CHECK(jp["breakdown"]["gpu_reserve_gib"].size() == p.gpu_reserve_bytes.size());
  CHECK(jp["breakdown"]["gpu_runtime_gib"].size() == p.gpu_runtime_bytes.size());
  const Plan back = plan_from_json(j, "p.json");
  CHECK(back.options.runtime == RuntimeKind::pytorch);
  CHECK(back.options.gpu_headroom == 0.1);
  CHECK(back.predicted.host_headroom == 0.05);
  REQUIRE(back.candidates.size() == plan.candidates.size());
  CHECK(back.candidates[0].fit_margin == plan.candidates[0].fit_margin);
  // A plan written before the runtime profile loads as muonplan's, without headroom.
  nlohmann::json old = j;
  old.erase("runtime");
  for (auto& c : old["decision"]["candidates"]) c.erase("fit_margin");
  const Plan legacy = plan_from_json(old, "old.json");
  CHECK(legacy.options.runtime == RuntimeKind::muonplan);
  CHECK(legacy.predicted.gpu_headroom == 0);
}

TEST_CASE("plan JSON: LoRA's active runs round-trip, written only when fewer than the slots",
          "[plan_json]") {
  PlanOptions o;
  o.optimizer = OptimizerKind::adamw;
  o.lora.rank = 8;
  o.lora.adapters = 4;
  const nlohmann::json all = plan_to_json(plan_fixed("tiny-dense", 1, OffloadMode::none, o));
  CHECK_FALSE(all["lora"].contains("active_runs"));  // every slot trains: as plans read before
  CHECK(plan_from_json(all, "p.json").options.lora.active_runs_or() == 4);
  o.lora.active_runs = 1;
  const nlohmann::json one = plan_to_json(plan_fixed("tiny-dense", 1, OffloadMode::none, o));
  CHECK(one["lora"]["active_runs"] == 1);
  CHECK(plan_from_json(one, "p.json").options.lora.active_runs == 1);
  nlohmann::json bad = one;
  bad["lora"]["active_runs"] = 5;  // more runs than slots
  CHECK_THROWS_AS(plan_from_json(bad, "p.json"), InputError);
}
