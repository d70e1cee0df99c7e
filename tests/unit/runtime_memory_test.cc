// The `pytorch` runtime profile (docs/planner.md, "Runtime"): each term against a hand
// calculation from the facts it models, and `muonplan` left as it was.
#include <catch2/catch.hpp>

#include "cost/runtime_memory.h"
#include "muonplan/base/units.h"
#include "test_plans.h"

using namespace muonplan;
using namespace muonplan::test;

TEST_CASE("NCCL communicators and their buffers for a layout", "[runtime]") {
  const PytorchRuntime rt;  // defaults: 12 MiB per connection, 32 ring / 32 NVLink p2p channels
  // GLM-4.5-Air's layout on one node: fsdp 8 (collectives + the Muon exchange), ep 8, cp 4.
  const auto comms = nccl_communicators({8, 4, 8}, 8, 8, true, true, false);
  REQUIRE(comms.size() == 3);
  CHECK(comms[0].name == "fsdp");
  CHECK(comms[1].name == "ep");
  CHECK(comms[2].name == "cp");
  // fsdp: ring 32 x 12 MiB = 384, NVLS 32 MiB x 8 local GPUs = 256, all-to-all 7 peers x 32 x
  // 12 MiB = 2688 (nccl#1685's 8 x H100 figure).
  CHECK(nccl_device_bytes(comms[0], rt, true) == (384 + 256 + 2688) * MiB);
  CHECK(nccl_device_bytes(comms[1], rt, true) == 2688 * MiB);
  CHECK(nccl_device_bytes(comms[2], rt, true) == 3 * 32 * 12 * MiB);
  // No workload: the optimizer step's exchange only. signSGD: a ring, no all-to-all.
  CHECK(nccl_communicators({8, 4, 8}, 8, 8, true, false, false).size() == 1);
  const auto sign = nccl_communicators({8, 1, 1}, 8, 8, false, false, false);
  REQUIRE(sign.size() == 1);
  CHECK(nccl_device_bytes(sign[0], rt, true) == (384 + 256) * MiB);
  // Two nodes, fsdp 16: 7 NVLink peers x 32 and 8 network peers x 2 channels, plus the network
  // p2p pool (2 directions x 2 channels x 16 x 128 KiB = 8 MiB).
  const auto two = nccl_communicators({16, 1, 8}, 16, 8, true, false, false);
  REQUIRE(two.size() == 2);  // fsdp, expert_fsdp (16 / 8 = 2 ranks)
  CHECK(nccl_device_bytes(two[0], rt, true) == (384 + 256 + (7 * 32 + 8 * 2) * 12 + 8) * MiB);
  CHECK(two[1].name == "expert_fsdp");
  CHECK(nccl_device_bytes(two[1], rt, true) == (384 + 2 * 32) * MiB);
}

TEST_CASE("pinned rounding", "[runtime]") {
  // Pinned host memory: the next power of two (sglang#36562: 20.4 GiB pinned 32 GiB).
  CHECK(pinned_block_bytes(20.4 * kGiB) == 32 * kGiB);
  CHECK(pinned_block_bytes(256 * MiB) == 256 * MiB);
  double asked = 0, pinned = 0;
  for (double s : {3.0 * MiB, 5.0 * MiB, 129.5e6, 4e9}) {
    asked += s;
    pinned += pinned_block_bytes(s);
  }
  CHECK(pinned == (4 + 8 + 128) * MiB + 4 * kGiB);
  CHECK(pinned - asked > 0);
}

TEST_CASE("runtime pytorch adds named terms; muonplan stays as the executor allocates",
          "[runtime]") {
  PlanOptions o;
  o.layout = {8, 4, 8};
  o.workload = Workload{1048576, 131072, 1, true, true, 1024, CpStyle::ulysses};
  const Plan mine = plan_fixed("glm-4.5-air", 1, OffloadMode::full, o);
  o.runtime = RuntimeKind::pytorch;
  const Plan torch = plan_fixed("glm-4.5-air", 1, OffloadMode::full, o);
  const Prediction& m = mine.predicted;
  const Prediction& p = torch.predicted;
  CHECK(has(m.gpu_fixed_bytes, "allocator_slack"));
  CHECK(m.gpu_reserve_bytes.empty());
  CHECK(m.gpu_runtime_bytes.empty());
  // Under pytorch the workload terms are the timeline's tensors at its allocated peak
  // (memory_terms_test.cc), under muonplan the closed form's: both list the checkpoints.
  CHECK(has(m.gpu_workload_bytes, "checkpointed_layer_inputs"));
  CHECK(has(p.gpu_workload_bytes, "checkpointed_layer_inputs"));
  for (const Term& t : p.gpu_workload_bytes)
    CHECK(t.formula.find("at " + p.gpu_allocated_peak_at + ": ") == 0);
  // Outside the allocator: the context and three communicators (see above).
  CHECK(term(p.gpu_fixed_bytes, "cuda_context").value == Approx(0.27 * kGiB));
  CHECK(term(p.gpu_fixed_bytes, "nccl_fsdp").value == (384 + 256 + 2688) * MiB);
  CHECK(term(p.gpu_fixed_bytes, "nccl_ep").value == 2688 * MiB);
  CHECK(term(p.gpu_fixed_bytes, "nccl_cp").value == 1152 * MiB);
  CHECK(term(p.gpu_runtime_bytes, "cublas_workspace").value == 32 * MiB);
  // The allocator is simulated (caching_allocator_test.cc, step_timeline_test.cc): allocated
  // is the timeline's allocated peak, its terms the tensors live there and the blocks'
  // rounding; the reserve is the reserved peak beyond it. The fitted fudge factors are gone.
  CHECK_FALSE(has(p.gpu_runtime_bytes, "allocation_timeline"));
  CHECK(has(p.gpu_runtime_bytes, "allocator_block_rounding"));
  CHECK_FALSE(has(p.gpu_reserve_bytes, "transient_fragmentation"));
  CHECK_FALSE(has(p.gpu_reserve_bytes, "fsdp2_all_gather_pool"));
  CHECK(p.gpu_reserve_bytes.size() == 1);
  CHECK(term(p.gpu_reserve_bytes, "allocator_simulated_reserve").value >= 0);
  CHECK(sum(p.gpu_live_at_peak_bytes) == Approx(p.gpu_allocated_bytes()).epsilon(1e-12));
  CHECK_FALSE(p.gpu_allocated_peak_at.empty());
  CHECK(m.gpu_allocated_peak_at.empty());
  CHECK(p.gpu_peak_bytes() == Approx(p.gpu_reserved_bytes() + sum(p.gpu_fixed_bytes)));
  CHECK(p.gpu_reserved_bytes() > p.gpu_allocated_bytes());
  // Host: the layer inputs offloaded are 256 MiB each, already a power of two; the pinned
  // staging buffers (bf16 momentum, update, weights of 2 batches in flight, 8 ranks) are each
  // rounded up from the largest batch's bf16 share.
  double largest = 0;
  for (const Chunk& c : torch.chunks.chunks) {
    if (c.kind != Chunk::Kind::adamw_group)
      largest = std::max(largest, 2.0 * double(c.params) / std::max(1, c.group_size));
  }
  CHECK(term(p.host_bytes_per_node, "pinned_staging").value == 3 * 2 * 8 * largest);
  CHECK(term(p.host_bytes_per_node, "pinned_rounding").value ==
        3 * 2 * 8 * (pinned_block_bytes(largest) - largest));
  CHECK(term(p.host_bytes_per_node, "host_runtime").value ==
        8 * torch.topology.pytorch.host_per_rank_gib * kGiB);
  CHECK(!has(p.host_bytes_per_node, "process_overhead"));
}

TEST_CASE("optimizer offload under pytorch pins each state tensor at a power of two", "[runtime]") {
  PlanOptions o;
  o.runtime = RuntimeKind::pytorch;
  const Plan plan = plan_fixed("qwen3-8b", 1, OffloadMode::optimizer, o);
  const Prediction& p = plan.predicted;
  // Hand sum over node 0's ranks and every tensor's state arrays.
  double extra = 0;
  for (int r = 0; r < 8; ++r) {
    for (size_t i = 0; i < plan.inventory.tensors.size(); ++i) {
      const ParamTensor& t = plan.inventory.tensors[i];
      const double n =
          double(plan.shards[i].range(t.shape[0], r).size()) * double(t.numel() / t.shape[0]);
      if (n <= 0) continue;
      const std::vector<double> arrays =
          t.rule == UpdateRule::muon ? std::vector<double>{4} : std::vector<double>{4, 4};
      for (double b : arrays) extra += pinned_block_bytes(n * b) - n * b;
    }
  }
  CHECK(term(p.host_bytes_per_node, "pinned_rounding").value == Approx(extra));
  CHECK(extra > 0.2 * term(p.host_bytes_per_node, "optimizer_state").value);
}

TEST_CASE("the fit keeps headroom and says by how much", "[runtime]") {
  PlanOptions o;
  o.gpu_memory_gib = 40;
  Plan a = plan_fixed("qwen3-8b", 1, OffloadMode::none, o);
  const double peak = a.predicted.gpu_peak_bytes();
  CHECK(a.predicted.gpu_headroom == 0);  // muonplan: no headroom by default
  CHECK(a.predicted.fit_margin() ==
        Approx(std::min(1 - peak / (40 * kGiB),
                        1 - a.predicted.host_bytes() / a.predicted.host_limit_bytes)));
  o.gpu_headroom = 1 - (peak / (40 * kGiB)) + 0.01;  // just too much headroom to fit
  Plan b = plan_fixed("qwen3-8b", 1, OffloadMode::none, o);
  CHECK(!b.predicted.fits());
  CHECK(b.predicted.fit_margin() < 0);
  o.runtime = RuntimeKind::pytorch;
  o.gpu_headroom = -1;
  CHECK(plan_fixed("qwen3-8b", 1, OffloadMode::none, o).predicted.gpu_headroom == 0.05);
}
