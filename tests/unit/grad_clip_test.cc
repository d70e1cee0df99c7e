// Gradient clipping as prime-rl's trainers run it (cost/grad_clip.h): its work on a rank by hand
// from torch's foreach limits, and the plan's `grad_clip` term built from it.
#include <catch2/catch.hpp>

#include "cost/grad_clip.h"
#include "muonplan/planner/inventory.h"
#include "muonplan/planner/plan.h"
#include "muonplan/planner/workload.h"
#include "test_plans.h"

using namespace muonplan;
using test::h200;
using test::has;
using test::model;
using test::term;

namespace {

ParamTensor tensor(const std::string& name, std::vector<int64_t> shape, bool expert = false) {
  ParamTensor t;
  t.name = name;
  t.shape = std::move(shape);
  t.stack_dim = expert ? 0 : -1;
  t.routed_expert = expert;
  return t;
}

}  // namespace

TEST_CASE("grad_clip_work: 3 gradient bytes per byte held, foreach launches, one norm each",
          "[grad_clip]") {
  // 300 small tensors of 1000 elements and one of 2^26: on 4 ranks 250 and 2^24 elements each.
  ParamInventory inv;
  for (int i = 0; i < 300; ++i) inv.tensors.push_back(tensor("n" + std::to_string(i), {1000}));
  inv.tensors.push_back(tensor("w", {8192, 8192}));
  inv.frozen.push_back(tensor("frozen", {8192, 8192}));  // LoRA's base: no gradient
  PlanOptions o;
  o.workload = Workload{};
  CHECK(grad_clip_work(inv, o, 4, 1).bytes == 0);  // no trainer: the muonplan runtime
  o.workload->trainer = "rl";
  const GradClipWork w = grad_clip_work(inv, o, 4, 1);
  const double elems = 300 * 250.0 + 8192.0 * 8192 / 4;
  CHECK(w.bytes == 3 * 4 * elems);  // fp32 shards: the norm reads, the multiply reads and writes
  // Chunks of 65536: 300 of the small shards, 256 of the large: 556 over 320 a launch is 2
  // launches, 301 tensors over 110 a launch is 3: 3 per pass, twice, and the 5 small ops.
  CHECK(w.launches == 2 * 3 + 5);
  CHECK(w.collectives == 1);
  // Under EP the expert stacks' norm and the others' each: the same bytes, two all-reduces. An
  // expert stack of 2^26 elements (64 chunks a shard after ep x fsdp / ep = 4 ranks) joins.
  inv.tensors.push_back(tensor("experts", {64, 1024, 1024}, true));
  const double with_experts = elems + 64.0 * 1024 * 1024 / 4;
  const GradClipWork ep = grad_clip_work(inv, o, 4, 2);
  CHECK(ep.bytes == 3 * 4 * with_experts);
  CHECK(ep.collectives == 2);
  // The others as before (3 launches a pass), the experts 1 tensor of 256 chunks (1 a pass).
  CHECK(ep.launches == (2 * 3 + 5) + (2 * 1 + 5));
  inv.tensors.pop_back();
  // bf16 masters keep bf16 gradient shards; full offload turns clipping off.
  o.workload->master_bytes = 2;
  CHECK(grad_clip_work(inv, o, 4, 1).bytes == 3 * 2 * elems);
  o.offload = OffloadMode::full;
  CHECK(grad_clip_work(inv, o, 4, 1).bytes == 0);
}

TEST_CASE("the plan's grad_clip term: the work on the HBM, the launches, the all-reduce",
          "[grad_clip]") {
  const Topology topo = h200();
  PlanRequest r = test::one_node_rows(4096);
  CHECK_FALSE(has(make_plan(model("qwen3-0.6b"), topo, r).predicted.training_terms_s, "grad_clip"));
  r.options.workload->trainer = "sft";
  const Plan p = make_plan(model("qwen3-0.6b"), topo, r);
  const GradClipWork g = grad_clip_work(build_inventory(model("qwen3-0.6b")), r.options, 8, 1);
  const Calibration& cal = topo.calibration;
  const double hbm = topo.node.gpu.hbm_gbps * 1e9 * cal.hbm_efficiency;
  // One all-reduce over 8 ranks of one node: 7 NVLink hops and the collective's fixed cost.
  const double allreduce_s = (7 * topo.node.nvlink_latency_us + cal.collective_us) * 1e-6;
  CHECK(term(p.predicted.training_terms_s, "grad_clip").value ==
        Approx(g.bytes / hbm + g.launches * cal.kernel_launch_us * 1e-6 + allreduce_s)
            .epsilon(1e-12));
  // Every fp32 gradient of Qwen3-0.6B, an eighth on each rank, read twice and written once.
  const double params = double(build_inventory(model("qwen3-0.6b")).summarize().params_total);
  CHECK(g.bytes == Approx(12 * params / 8).epsilon(1e-12));
}
