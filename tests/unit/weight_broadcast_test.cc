// prime-rl's weight broadcast between RL steps (cost/weight_broadcast.h): the bytes rank 0
// saves, by hand from the inventory, and the plan's `between_steps_s` term built from them.
#include <catch2/catch.hpp>

#include "cost/weight_broadcast.h"
#include "muonplan/planner/inventory.h"
#include "muonplan/planner/lora.h"
#include "muonplan/planner/plan.h"
#include "muonplan/planner/workload.h"
#include "test_plans.h"

using namespace muonplan;
using test::h200;
using test::has;
using test::model;
using test::one_node_rows;
using test::term;

TEST_CASE("weight_broadcast_bytes: every parameter in bf16, or each active run's adapter slot",
          "[weight_broadcast]") {
  const ModelSpec s = model("qwen3-0.6b");
  const ParamInventory inv = build_inventory(s);
  const double params = double(inv.summarize().params_total);
  PlanOptions o = one_node_rows(4096, "rl").options;
  CHECK(weight_broadcast_bytes(inv, o) == 2 * params);
  // SFT saves weights at checkpoints only; the muonplan runtime (no trainer) has no servers.
  o.workload->trainer = "sft";
  CHECK(weight_broadcast_bytes(inv, o) == 0);
  o.workload->trainer = "";
  CHECK(weight_broadcast_bytes(inv, o) == 0);
  // LoRA: 4 slots, the adapters in fp32; 0, 1 and every (-1) active run.
  o.workload->trainer = "rl";
  o.lora.rank = 16;
  o.lora.adapters = 4;
  ParamInventory lora = build_inventory(s);
  apply_lora(lora, o.lora);
  double adapters = 0;
  for (const ParamTensor& t : lora.tensors) adapters += double(t.numel());
  // Qwen3-0.6B's 28 layers, each r x (in + out) on q, k, v, o, gate, up, down, per slot.
  const double per_slot =
      28.0 * 16 *
      ((1024 + 2048) + 2 * (1024 + 1024) + (2048 + 1024) + 2 * (1024 + 3072) + (3072 + 1024));
  CHECK(adapters == 4 * per_slot);
  o.lora.active_runs = 0;
  CHECK(weight_broadcast_bytes(lora, o) == 0);
  o.lora.active_runs = 1;
  CHECK(weight_broadcast_bytes(lora, o) == 4 * per_slot);
  o.lora.active_runs = -1;
  CHECK(weight_broadcast_bytes(lora, o) == 4 * 4 * per_slot);
  o.workload->master_bytes = 2;  // bf16 masters: the adapters as the trainer holds them
  CHECK(weight_broadcast_bytes(lora, o) == 4 * 2 * per_slot);
}

TEST_CASE("the plan's between_steps_s: the broadcast over the topology's rate, outside the step",
          "[weight_broadcast]") {
  Topology topo = h200();
  REQUIRE(topo.calibration.weight_broadcast_gbps > 0);  // fitted.yaml's section
  PlanRequest r = one_node_rows(4096, "rl");
  const Plan p = make_plan(model("qwen3-0.6b"), topo, r);
  const double params = double(build_inventory(model("qwen3-0.6b")).summarize().params_total);
  const Term& b = term(p.predicted.between_steps_s, "weight_broadcast");
  CHECK(b.value ==
        Approx(2 * params / (topo.calibration.weight_broadcast_gbps * 1e9)).epsilon(1e-12));
  // Not part of the step: the same plan without the rate has the same training step.
  topo.calibration.weight_broadcast_gbps = 0;
  const Plan none = make_plan(model("qwen3-0.6b"), topo, r);
  CHECK(none.predicted.between_steps_s.empty());
  CHECK(*none.predicted.training_step_s == *p.predicted.training_step_s);
  // SFT broadcasts nothing.
  topo = h200();
  r.options.workload->trainer = "sft";
  CHECK_FALSE(
      has(make_plan(model("qwen3-0.6b"), topo, r).predicted.between_steps_s, "weight_broadcast"));
}
