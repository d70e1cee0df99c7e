#include <catch2/catch.hpp>

#include "muonplan/error.h"
#include "muonplan/model_io.h"
#include "muonplan/ns_model.h"
#include "muonplan/plan.h"
#include "muonplan/units.h"
#include "muonplan/validation.h"
#include "test_paths.h"

using namespace muonplan;

namespace {

Topology h200() {
  return load_topology(repo_path("topologies/h200-ib.yaml"));
}
ModelSpec model(const std::string& name) {
  return load_model(repo_path("models/" + name + ".yaml"));
}

Plan plan_fixed(const std::string& name, int nodes, OffloadMode mode, PlanOptions o = {}) {
  PlanRequest r;
  r.options = o;
  r.options.nodes = nodes;
  r.options.offload = mode;
  return make_plan(model(name), h200(), r);
}

double term(const std::vector<Term>& terms, const std::string& name) {
  for (const Term& t : terms) {
    if (t.name == name) return t.value;
  }
  FAIL("no term " << name);
  return 0;
}

}  // namespace

TEST_CASE("predictions match the published H200 measurements within tolerance", "[planner]") {
  const std::vector<ValidationRow> rows = validate_published(
      repo_path("tests/data/calibration/published.yaml"), repo_path("models"), h200());
  int checked = 0;
  for (const ValidationRow& r : rows) {
    INFO(r.figure << " " << r.setting << ": published " << r.published << ", predicted "
                  << r.predicted);
    CHECK(r.ok());
    checked += r.checked();
  }
  CHECK(checked == 3 + 2 * 4);  // three NS calls, two offload modes x four figures
}

TEST_CASE("NS FLOPs: 4 m^2 n + 2 m^3 per iteration, m the smaller side", "[planner]") {
  CHECK(ns_flops(768, 2048, 5) == 5 * (4.0 * 768 * 768 * 2048 + 2.0 * 768 * 768 * 768));
  CHECK(ns_flops(2048, 768, 5) == ns_flops(768, 2048, 5));
  CHECK(ns_flops(768, 2048, 1, true) == 3.0 * 768 * 768 * 2048 + 1.0 * 768 * 768 * 768);
  const NsCost c = ns_cost(h200(), 16, 1408, 4096, ns_schedule("quintic"));
  CHECK(c.flops == 16 * ns_flops(1408, 4096, 5));
  CHECK(c.total_s == Approx(c.normalize_s + c.gemm_s));
  // deepseek-v4 runs 10 iterations: about twice a 5-step schedule.
  const NsCost v4 = ns_cost(h200(), 16, 1408, 4096, ns_schedule("deepseek-v4"));
  CHECK(v4.total_s / c.total_s == Approx(2.0).epsilon(0.05));
}

TEST_CASE("the pipeline overlaps one chunk's exchange with another's compute", "[planner]") {
  const std::vector<Stage> chunk = {
      {Resource::gpu, 1, ""}, {Resource::network, 1, ""}, {Resource::gpu, 1, ""}};
  CHECK(simulate_pipeline({chunk, chunk}, 1).makespan_s == Approx(6));
  CHECK(simulate_pipeline({chunk, chunk}, 2).makespan_s == Approx(4));
  const PipelineResult r = simulate_pipeline({chunk, chunk, chunk}, 3);
  CHECK(r.busy_s[static_cast<int>(Resource::gpu)] == Approx(6));
  CHECK(r.makespan_s >= 6);
  CHECK(simulate_pipeline({}, 3).makespan_s == 0);
}

TEST_CASE("memory terms add up and follow the offload mode", "[planner]") {
  PlanOptions o;
  const Plan none = plan_fixed("qwen3-8b", 1, OffloadMode::none, o);
  const Prediction& p = none.predicted;
  const double params = double(build_inventory(model("qwen3-8b")).summarize().params_total) / 8;
  CHECK(term(p.gpu_persistent_bytes, "params_fp32") == Approx(4 * params).epsilon(0.01));
  CHECK(p.gpu_peak_bytes() ==
        Approx(sum(p.gpu_persistent_bytes) + sum(p.gpu_transient_bytes) + sum(p.gpu_fixed_bytes)));
  o.bf16_momentum = true;
  const Plan bf16 = plan_fixed("qwen3-8b", 1, OffloadMode::none, o);
  CHECK(term(bf16.predicted.gpu_persistent_bytes, "muon_momentum") ==
        Approx(term(p.gpu_persistent_bytes, "muon_momentum") / 2));
  // Optimizer offload: state moves to host and back once per step.
  const Plan opt = plan_fixed("qwen3-8b", 1, OffloadMode::optimizer);
  CHECK(opt.predicted.h2d_bytes_per_gpu == Approx(opt.predicted.d2h_bytes_per_gpu));
  CHECK(opt.predicted.h2d_bytes_per_gpu * 8 ==
        Approx(term(opt.predicted.host_bytes_per_node, "optimizer_state")));
}

TEST_CASE("full offload keeps 12 B per Muon param on the host, 16 for AdamW, 8 for signSGD",
          "[planner]") {
  const double n = double(build_inventory(model("qwen3-8b")).summarize().params_total);
  for (auto [opt, bytes] : {std::pair{OptimizerKind::adamw, 16.0}, {OptimizerKind::signsgd, 8.0}}) {
    PlanOptions o;
    o.optimizer = opt;
    const Prediction p = plan_fixed("qwen3-8b", 1, OffloadMode::full, o).predicted;
    const double host = term(p.host_bytes_per_node, "fp32_master") +
                        term(p.host_bytes_per_node, "fp32_grad_accumulator") +
                        term(p.host_bytes_per_node, "optimizer_state");
    CHECK(host / n == Approx(bytes));
  }
  const Prediction muon = plan_fixed("qwen3-8b", 1, OffloadMode::full).predicted;
  const InventorySummary s = build_inventory(model("qwen3-8b")).summarize();
  CHECK(term(muon.host_bytes_per_node, "optimizer_state") ==
        Approx(4.0 * s.params_muon + 8.0 * s.params_adamw));
}

TEST_CASE("the search takes the fewest nodes that fit, then the fewest GPU-seconds", "[planner]") {
  PlanRequest r;
  r.auto_nodes = r.auto_offload = true;
  const Plan p = make_plan(model("glm-4.5-air"), h200(), r);
  REQUIRE(p.fits);
  for (const Candidate& c : p.candidates) {
    if (c.fits) CHECK(c.nodes >= p.options.nodes);
    if (c.fits && c.nodes == p.options.nodes)
      CHECK(c.gpu_seconds >= p.predicted.step_s() * p.world - 1e-9);
  }
  CHECK(p.reason.find("fewest nodes that fit") != std::string::npos);
  // Nothing fits in 8 GiB per GPU on up to 2 nodes: an answer, not an error.
  r.options.gpu_memory_gib = 8;
  r.max_nodes = 2;
  const Plan none = make_plan(model("glm-4.5-air"), h200(), r);
  CHECK_FALSE(none.fits);
  CHECK(none.candidates.size() == 6);
  CHECK(none.reason.find("does not fit") != std::string::npos);
}

TEST_CASE("impossible requests are input errors with a clear reason", "[planner]") {
  PlanRequest r;
  r.options.nodes = 0;
  CHECK_THROWS_WITH(make_plan(model("qwen3-8b"), h200(), r),
                    "--nodes: must be a positive integer or auto, got 0");
  r.options.nodes = 1;
  r.options.layout = parse_layout("fsdp=3");
  CHECK_THROWS_WITH(make_plan(model("qwen3-8b"), h200(), r),
                    Catch::Contains("fsdp=3 does not divide world 8"));
  r.options.layout = parse_layout("ep=2");
  CHECK_THROWS_WITH(make_plan(model("qwen3-8b"), h200(), r), Catch::Contains("needs an MoE model"));
  CHECK_THROWS_WITH(parse_layout("fsdp=x"), "--layout: fsdp must be an integer, got 'x'");
  CHECK_THROWS_WITH(parse_layout("tp=2"), Catch::Contains("unknown key 'tp'"));
}

TEST_CASE("a workload adds activations and a training-step time", "[planner]") {
  PlanOptions o;
  o.workload = Workload{4 * 1024 * 1024, 4096, 1, true, false};
  const Plan p = plan_fixed("qwen3-30b-a3b", 2, OffloadMode::none, o);
  REQUIRE(p.predicted.training_step_s.has_value());
  CHECK(*p.predicted.training_step_s > p.predicted.optimizer_step_s);
  CHECK(term(p.predicted.gpu_workload_bytes, "checkpointed_layer_inputs") ==
        Approx(48.0 * 2 * 4096 * 2048));
  o.workload->ac_offload = true;
  const Plan off = plan_fixed("qwen3-30b-a3b", 2, OffloadMode::none, o);
  CHECK(term(off.predicted.host_bytes_per_node, "ac_offload") ==
        Approx(8 * 48.0 * 2 * 4096 * 2048));
  CHECK(off.predicted.gpu_peak_bytes() < p.predicted.gpu_peak_bytes());
}

TEST_CASE("plan JSON carries the contract's keys", "[planner]") {
  const nlohmann::json j = plan_to_json(plan_fixed("tiny-moe", 1, OffloadMode::none));
  CHECK(j["schema"] == "muonplan.plan/1");
  for (const char* k : {"nodes", "gpus_per_node", "world_size", "offload", "optimizer", "owners",
                        "fits", "limits", "predicted", "chunks", "decision"}) {
    CHECK(j.contains(k));
  }
  for (const char* k :
       {"gpu_peak_gib", "gpu_transient_gib", "host_ram_per_node_gib", "alltoall_gb_per_rank_max",
        "h2d_gb_per_gpu", "d2h_gb_per_gpu", "optimizer_step_s", "training_step_s", "breakdown"}) {
    CHECK(j["predicted"].contains(k));
  }
  CHECK(j["predicted"]["training_step_s"].is_null());
  for (const auto& c : j["chunks"]) {
    for (const char* k : {"kind", "rows", "cols", "count", "params", "shard_group", "owners"}) {
      CHECK(c.contains(k));
    }
  }
}
