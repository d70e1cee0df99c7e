// Experts under HSDP (shards.h, docs/planner.md "Experts under HSDP"): prime-rl's mesh
// (dp_replicate, dp_shard_cp) replicates the experts across the replica groups and shards them
// inside each group over ep x (fsdp / ep), for memory and for traffic. Each figure here is
// against a hand count of Qwen3-30B-A3B's 48 layers of 128 stacked experts.
#include <catch2/catch.hpp>

#include "muonplan/planner/layout.h"
#include "muonplan/planner/plan.h"
#include "test_plans.h"

using namespace muonplan;
using namespace muonplan::test;  // model, topology and plan helpers (test_plans.h)

namespace {

const ParamTensor& first_stack(const ParamInventory& inv) {
  for (const ParamTensor& t : inv.tensors) {
    if (t.stack_dim == 0) return t;
  }
  FAIL("no expert stack");
  return inv.tensors.front();
}

// Elements of the model's expert stacks and of everything else.
std::pair<double, double> expert_and_rest(const ParamInventory& inv) {
  double experts = 0, rest = 0;
  for (const ParamTensor& t : inv.tensors) (t.stack_dim == 0 ? experts : rest) += double(t.numel());
  return {experts, rest};
}

Plan fixed(int nodes, const char* layout, std::optional<Workload> w = std::nullopt) {
  PlanOptions o;
  o.layout = parse_layout(layout);
  o.workload = std::move(w);
  return plan_fixed("qwen3-30b-a3b", nodes, OffloadMode::none, o);
}

}  // namespace

TEST_CASE("HSDP experts: each replica group holds every expert, sharded over its fsdp ranks",
          "[hsdp_experts]") {
  const ModelSpec spec = model("qwen3-30b-a3b");
  const ParamInventory inv = build_inventory(spec);
  const ParamTensor& stack = first_stack(inv);
  REQUIRE(stack.shape[0] == 128);
  SECTION("without EP: 128 experts over the 8 ranks of a group, 16 each, twice over 16 ranks") {
    const Layout l = resolve_layout(parse_layout("fsdp=8"), 16, spec);
    const ShardRule rule = shard_rule(stack, l, 16);
    CHECK(rule.ep == 1);
    CHECK(rule.dp == 8);
    for (int r = 0; r < 16; ++r) {
      const Range got = local_range(stack, l, 16, r);
      CHECK(got.begin == 16 * (r % 8));  // rank r and its replica r + 8 hold the same experts
      CHECK(got.size() == 16);
      CHECK(rule.primary(r) == (r < 8));
    }
    CHECK(place(stack, l, 16).group_size == 8);
  }
  SECTION("with EP 4: 32 experts per ep rank, split again over fsdp / ep = 2 ranks") {
    const Layout l = resolve_layout(parse_layout("fsdp=8,ep=4"), 16, spec);
    const ShardRule rule = shard_rule(stack, l, 16);
    CHECK(rule.ep == 4);
    CHECK(rule.dp == 2);
    for (int r = 0; r < 16; ++r) {
      const int in_group = r % 8, ep_rank = in_group % 4, dp_rank = in_group / 4;
      const Range got = local_range(stack, l, 16, r);
      CHECK(got.begin == 32 * ep_rank + 16 * dp_rank);
      CHECK(got.size() == 16);
    }
  }
  SECTION("ep must divide fsdp: the expert mesh lies inside the shard group") {
    CHECK_THROWS_WITH(resolve_layout(parse_layout("fsdp=2,ep=4"), 16, spec),
                      Catch::Contains("ep=4 does not divide fsdp=2"));
  }
}

TEST_CASE("HSDP experts: memory per GPU is the same with the replicas on one node or several",
          "[hsdp_experts]") {
  const auto [experts, rest] = expert_and_rest(build_inventory(model("qwen3-30b-a3b")));
  for (const char* layout : {"fsdp=8", "fsdp=8,ep=8", "fsdp=8,ep=2"}) {
    CAPTURE(layout);
    const Plan one = fixed(1, layout), two = fixed(2, layout), four = fixed(4, layout);
    const double fp32_one = term(one.predicted.gpu_persistent_bytes, "params_fp32").value;
    CHECK(term(two.predicted.gpu_persistent_bytes, "params_fp32").value == fp32_one);
    CHECK(term(four.predicted.gpu_persistent_bytes, "params_fp32").value == fp32_one);
    // Hand count: 4 B x (every param / 8), within the rows' uneven split.
    CHECK(fp32_one == Approx(4 * (experts + rest) / 8).epsilon(0.01));
  }
}

TEST_CASE("HSDP experts: traffic gathers inside the group and all-reduces across replicas",
          "[hsdp_experts]") {
  const auto [experts, rest] = expert_and_rest(build_inventory(model("qwen3-30b-a3b")));
  // 16 rows of 4096 tokens: one micro step per rank on 16 ranks, two on 8.
  const Workload w{16 * 4096, 4096, 1, true, false, 0};
  for (const char* layout : {"fsdp=8", "fsdp=8,ep=4"}) {
    CAPTURE(layout);
    const Plan one = fixed(1, layout, w), two = fixed(2, layout, w);
    const Layout l = parse_layout(layout);
    const double de = 8.0 / l.ep;  // the experts' FSDP group inside the shard group
    for (const auto& [plan, micro] : {std::pair{&one, 2.0}, {&two, 1.0}}) {
      const std::vector<Term>& c = plan->predicted.comm_bytes;
      // Reduce-scatter of fp32 gradients: non-experts over 8 ranks, each ep rank's experts over
      // fsdp / ep ranks.
      const double rs = micro * 4 * (rest * 7 / 8 + experts / l.ep * (de - 1) / de);
      CHECK(term(c, "fsdp_reduce_scatter").value == Approx(rs).epsilon(1e-9));
    }
    CHECK_FALSE(has(one.predicted.comm_bytes, "hsdp_all_reduce"));
    // Two replicas: each rank all-reduces its fp32 gradient shard, (experts + rest) / 8, once per
    // micro step: 2 x (R - 1) / R of it leaves the rank.
    const double ar = 1.0 * 4 * (experts + rest) / 8 * 2 * 1 / 2;
    CHECK(term(two.predicted.comm_bytes, "hsdp_all_reduce").value == Approx(ar).epsilon(1e-9));
  }
}
