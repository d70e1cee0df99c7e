#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <numeric>
#include <vector>

#include "muonplan/base/error.h"
#include "muonplan/planner/model_io.h"
#include "muonplan/planner/ns_model.h"
#include "muonplan/planner/plan.h"
#include "muonplan/planner/plan_request.h"
#include "muonplan/planner/prime_rl.h"
#include "muonplan/tools/report_data.h"
#include "prime_rl/prime_rl_rules.h"
#include "prime_rl/trainer_config.h"
#include "test_paths.h"

using namespace muonplan;

namespace {

using test::error_of;

}  // namespace

TEST_CASE("node counts: a count, a range or a list", "[report]") {
  CHECK(parse_node_counts("3", 8) == std::vector<int>{3});
  CHECK(parse_node_counts("1..4", 8) == std::vector<int>{1, 2, 3, 4});
  CHECK(parse_node_counts("8,2,4,2", 8) == std::vector<int>{2, 4, 8});
  CHECK(error_of([] { parse_node_counts("4..2", 8); }) == "--nodes: empty range '4..2'");
  for (const char* bad : {"", "0", "1..", "a,b", "1,,2", "-1..3"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_node_counts(bad, 8), InputError);
  }
  // Beyond the topology: refused before a billion counts are expanded.
  CHECK(error_of([] { parse_node_counts("1..1000000000", 64); }) ==
        "--nodes: '1..1000000000' goes beyond the topology's max_nodes (64)");
  CHECK(error_of([] { parse_node_counts("2,65", 64); }) ==
        "--nodes: '2,65' goes beyond the topology's max_nodes (64)");
  Topology topo = load_topology(repo_path("topologies/cpu-ci.yaml"));
  CHECK(default_node_counts(topo) == std::vector<int>{1, 2});  // max_nodes 2
}

TEST_CASE("node counts: a sweep past kMaxSweepNodeCounts is sampled, ends and chosen kept",
          "[report]") {
  const std::vector<int> few = {1, 2, 4, 8};
  CHECK(sweep_node_counts(few, 4) == few);
  std::vector<int> many;
  for (int n = 1; n <= 16384; ++n) many.push_back(n);
  const std::vector<int> s = sweep_node_counts(many, 777);
  CHECK(s.size() <= kMaxSweepNodeCounts);
  CHECK(s.size() >= kMaxSweepNodeCounts - 1);
  CHECK(s.front() == 1);
  CHECK(s.back() == 16384);
  CHECK(std::is_sorted(s.begin(), s.end()));
  CHECK(std::count(s.begin(), s.end(), 777) == 1);
  // Evenly spaced by index: the second pick is (16384 - 1) / 126 = 130 steps on.
  CHECK(s[1] == 131);
}

TEST_CASE("report data: the sweep's points are the fixed plans, the chosen one the search's",
          "[report]") {
  const ModelSpec spec = load_model(repo_path("models/tiny-moe.yaml"));
  const Topology topo = load_topology(repo_path("topologies/cpu-ci.yaml"));
  PlanRequest base;
  base.options.gpus_per_node = 4;
  base.options.layout = parse_layout("fsdp=8");  // only a world of 8 (2 nodes) takes it
  ReportInputs in;
  in.node_counts = {1, 2};
  const nlohmann::json d = report_data(spec, topo, base, in);
  REQUIRE(d["sweep"].size() == 2 * 3 * 4);
  int skipped = 0;
  for (const auto& p : d["sweep"]) {
    if (p["nodes"] == 1) {
      CHECK(p["evaluated"] == false);
      CHECK(p["note"] == "fsdp=8 does not divide world 4");
      ++skipped;
      continue;
    }
    PlanRequest r = base;
    r.options.nodes = 2;
    r.options.offload = parse_offload(p["offload"]);
    const std::string v = p["optimizer"];
    r.options.optimizer = parse_optimizer(v == "muon-bf16-momentum" ? "muon" : v);
    r.options.bf16_momentum = v == "muon-bf16-momentum";
    nlohmann::json want = plan_to_json(make_plan(spec, topo, r))["predicted"];
    want.erase("breakdown");
    CHECK(p["predicted"] == want);
  }
  CHECK(skipped == 12);
  CHECK(d["chosen"]["nodes"] == 2);
  CHECK(d["owner_strategies"].size() == 4);
  // Each strategy's NS FLOPs per rank, counted by hand from the chunks and owners of the plan
  // `muonplan plan --owners S` makes for the chosen candidate (world 8 = one shard group): a
  // batch's owner runs one NS of rows x cols per matrix it owns, a local chunk's rank one per
  // local matrix. The max and the mean are those of the per-rank figures.
  REQUIRE(d["owner_strategies"].size() == 4);
  std::map<std::string, double> total, max;
  for (const auto& s : d["owner_strategies"]) {
    INFO(s["owners"]);
    PlanRequest r = base;
    r.options.nodes = 2;
    r.options.owners = parse_owner_strategy(s["owners"]);
    const Plan plan = make_plan(spec, topo, r);
    std::vector<double> flops(8, 0.0);
    for (const Chunk& c : plan.chunks.chunks) {
      const double f = ns_flops(c.rows, c.cols, 5);
      if (c.kind == Chunk::Kind::muon_batch) {
        for (int owner : c.owners) flops[owner] += f;
      } else if (c.kind == Chunk::Kind::muon_local) {
        for (int rank = 0; rank < 8; ++rank) flops[rank] += f * c.local.at(rank);
      }
    }
    const std::string name = s["owners"];
    total[name] = std::accumulate(flops.begin(), flops.end(), 0.0);
    max[name] = *std::max_element(flops.begin(), flops.end());
    CHECK(s["alltoall_bytes_per_rank"].size() == 8);
    CHECK(s["ns_flops_per_rank"] == flops);
    CHECK(s["ns_flops_max"] == max[name]);
    CHECK(s["ns_flops_mean"].get<double>() == Approx(total[name] / 8));
  }
  // Owners move work between ranks without adding any (padded's zero matrices aside), and
  // balanced starts from round-robin and never raises its maximum (owners.cc).
  CHECK(total["restart"] > 0);
  CHECK(total["round-robin"] == Approx(total["restart"]));
  CHECK(total["balanced"] == Approx(total["restart"]));
  CHECK(max["balanced"] <= max["round-robin"]);
}

TEST_CASE("report data: the chosen node count is one of the sweep's", "[report]") {
  // glm-4.5-air fits on 1 node: a sweep of 3 and 5 must still choose 3, not 1.
  const ModelSpec spec = load_model(repo_path("models/glm-4.5-air.yaml"));
  const Topology topo = load_topology(repo_path("topologies/h200-ib.yaml"));
  ReportInputs in;
  in.node_counts = {3, 5};
  const nlohmann::json d = report_data(spec, topo, PlanRequest{}, in);
  CHECK(d["chosen"]["nodes"] == 3);
  for (const auto& c : d["chosen"]["decision"]["candidates"]) CHECK(c["nodes"] == 3);
}

TEST_CASE("prime-rl config: values copied from the plan", "[report]") {
  const ModelSpec spec = load_model(repo_path("models/qwen3-30b-a3b.yaml"));
  const Topology topo = load_topology(repo_path("topologies/h200-ib.yaml"));
  PlanRequest r = to_plan_request(plan_flags_from_map({{"nodes", "2"},
                                                       {"layout", "fsdp=8,ep=8"},
                                                       {"offload", "optimizer"},
                                                       {"bf16-momentum", "1"}}));
  EmitInput e;
  e.model_id = "Qwen/Qwen3-30B-A3B";
  const std::string toml = prime_rl_config(plan_to_json(make_plan(spec, topo, r)), e);
  for (const char* line :
       {"num_train_nodes = 2\n", "name = \"Qwen/Qwen3-30B-A3B\"\n", "optim_cpu_offload = true\n",
        "dp_replicate = 2", "ep = 8\n", "# muonplan: bf16_momentum = true", "[trainer.model]\n",
        "[trainer.optim]\n",
        "# muonplan: newton_schulz_coefficients = [[4.0848, -6.8946, 2.927], "}) {
    INFO(line);
    CHECK(toml.find(line) != std::string::npos);
  }
  CHECK(toml.find("fsdp_cpu_offload") == std::string::npos);
  // false is written, so a plan that turns a file's full offload off changes the key.
  CHECK(toml.find("full_offload = false\n") != std::string::npos);
  // Without a trainer config only the plan's choices and the flags given are written: no
  // muonplan default for lr, weight decay, AC, AC offload or the LM head (issue 50 item 4).
  e.only_given = true;
  const std::string bare = prime_rl_config(plan_to_json(make_plan(spec, topo, r)), e);
  for (const char* key : {"lr =", "weight_decay =", "ac =", "ac_offloading =",
                          "fused_lm_head_token_chunk_size", "full_offload", "mu =", "betas"}) {
    INFO(key);
    CHECK(bare.find(key) == std::string::npos);
  }
  CHECK(bare.find("optim_cpu_offload = true\n") != std::string::npos);
  e.given = {"lr"};
  CHECK(prime_rl_config(plan_to_json(make_plan(spec, topo, r)), e).find("\nlr = ") !=
        std::string::npos);
}

TEST_CASE("prime-rl config: a plan prime-rl would run otherwise is not written", "[report]") {
  const ModelSpec spec = load_model(repo_path("models/qwen3-30b-a3b.yaml"));
  const Topology topo = load_topology(repo_path("topologies/h200-ib.yaml"));
  EmitInput e;
  e.model_id = "Qwen/Qwen3-30B-A3B";
  // Muon under full offload: prime-rl's full_offload refuses Muon; as no offload it would not
  // be the plan. The same plan with AdamW is written, full_offload = true.
  PlanRequest r = to_plan_request(
      plan_flags_from_map({{"nodes", "2"}, {"layout", "fsdp=8,ep=8"}, {"offload", "full"}}));
  const nlohmann::json muon = plan_to_json(make_plan(spec, topo, r));
  CHECK_THROWS_WITH(prime_rl_config(muon, e),
                    Catch::StartsWith("--emit: prime-rl cannot run this plan (2 node(s), "
                                      "offload full, optimizer muon): Muon under full "
                                      "offload: prime-rl's full_offload accepts only "
                                      "adamw and sign_sgd"));
  r.options.optimizer = OptimizerKind::adamw;
  const std::string adamw = prime_rl_config(plan_to_json(make_plan(spec, topo, r)), e);
  CHECK(adamw.find("full_offload = true\n") != std::string::npos);
  CHECK(adamw.find("optim_cpu_offload = false\n") != std::string::npos);
  CHECK(prime_rl_cannot_run(OffloadMode::full, OptimizerKind::muon, Layout{8, 1, 8}) != "");
  CHECK(prime_rl_cannot_run(OffloadMode::optimizer, OptimizerKind::muon, Layout{8, 2, 3}) != "");
  CHECK(prime_rl_cannot_run(OffloadMode::optimizer, OptimizerKind::muon, Layout{8, 2, 4}) == "");
}
