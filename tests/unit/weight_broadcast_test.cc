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

TEST_CASE("nccl_broadcast: each tensor gathered over the FSDP group, rank 0's groups broadcast",
          "[weight_broadcast]") {
  const ModelSpec s = model("qwen3-0.6b");
  const ParamInventory inv = build_inventory(s);
  PlanOptions o = one_node_rows(4096, "rl").options;  // fsdp 8 on one node of 8
  o.workload->weight_broadcast = "nccl";
  step_cost::Rates r{};
  r.hbm_bps = 4e12;
  r.intra_bps = 400e9, r.inter_bps = 40e9;
  r.intra_latency_s = 2e-6, r.inter_latency_s = 5e-6;
  double elements = 0;
  int64_t tensors = 0, layer_tensors = 0;
  for (const ParamTensor& t : inv.tensors) {
    elements += double(t.numel());
    ++tensors;
    layer_tensors += t.layer >= 0 ? 1 : 0;
  }
  REQUIRE(layer_tensors < tensors);  // embeddings, head, final norm: a group of their own
  const NcclBroadcast b = nccl_broadcast(inv, o, r, 8, 8);
  CHECK(b.bytes == 2 * elements);
  CHECK(b.tensors == tensors);
  CHECK(b.groups == 28 + 1);  // Qwen3-0.6B's 28 layers, then the rest
  // fp32 shards to bf16 (4 + 2 B of the 1/8 each rank holds), 7/8 of the rest over NVLink, a
  // ring of 7 hops a tensor.
  const double gather =
      elements / 8 * 6 / 4e12 + 2 * elements * 7 / 8 / 400e9 + double(tensors) * 7 * 2e-6;
  CHECK(b.gather_s == Approx(gather).epsilon(1e-12));
  // Inference elsewhere: across the network; on the trainer's one node: NVLink.
  const double send = 2 * 2 * elements / 4e12 + 2 * elements / 40e9 + 29 * 3 * 5e-6;
  CHECK(b.send_s == Approx(send).epsilon(1e-12));
  o.workload->inference_on_trainer_node = true;
  const NcclBroadcast local = nccl_broadcast(inv, o, r, 8, 8);
  CHECK(local.peers_local);
  CHECK_FALSE(b.peers_local);
  CHECK(local.send_s ==
        Approx(2 * 2 * elements / 4e12 + 2 * elements / 400e9 + 29 * 3 * 2e-6).epsilon(1e-12));
  // ...but not once the trainer spans two nodes, where its FSDP group crosses the network too.
  o.layout.fsdp = 16;
  const NcclBroadcast two = nccl_broadcast(inv, o, r, 16, 8);
  CHECK_FALSE(two.peers_local);
  CHECK(two.send_s == Approx(send).epsilon(1e-12));
  CHECK(two.gather_s == Approx(elements / 16 * 6 / 4e12 + 2 * elements * 15 / 16 / 40e9 +
                               double(tensors) * 15 * 5e-6)
                            .epsilon(1e-12));
}

TEST_CASE("the plan's NCCL broadcast: two terms between steps; with LoRA, the filesystem's",
          "[weight_broadcast]") {
  const Topology topo = h200();
  PlanRequest r = one_node_rows(4096, "rl");
  r.options.workload->weight_broadcast = "nccl";
  const Plan p = make_plan(model("qwen3-0.6b"), topo, r);
  CHECK(p.predicted.between_steps_s.size() == 2);
  const Term& gather = term(p.predicted.between_steps_s, "weight_gather");
  const Term& send = term(p.predicted.between_steps_s, "weight_broadcast");
  CHECK(gather.value > 0);
  CHECK(send.value > 0);
  CHECK(send.formula.find("across the network") != std::string::npos);
  // The filesystem's figure is the fitted rate's, far slower than the links.
  const Plan fs = make_plan(model("qwen3-0.6b"), topo, one_node_rows(4096, "rl"));
  CHECK(gather.value + send.value < term(fs.predicted.between_steps_s, "weight_broadcast").value);
  CHECK(*fs.predicted.training_step_s == *p.predicted.training_step_s);
  // LoRA: prime-rl's NCCL sender takes no LoRA config; not modelled, the filesystem's, said.
  r.options.lora.rank = 16;
  r.options.lora.adapters = 1;
  const Plan lora = make_plan(model("qwen3-0.6b"), topo, r);
  REQUIRE(lora.predicted.between_steps_s.size() == 1);
  CHECK(lora.predicted.between_steps_s[0].formula.find("NCCL's broadcast with LoRA is not "
                                                       "modelled") != std::string::npos);
}
