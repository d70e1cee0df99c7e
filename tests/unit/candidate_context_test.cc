// One candidate's context (planner/src/cost/candidate_context.h): each figure against the rule
// it is built by, on the bundled H200 topology and models.
#include <catch2/catch.hpp>

#include "cost/candidate_context.h"
#include "muonplan/base/units.h"
#include "muonplan/planfile/step_buffers.h"
#include "test_plans.h"

using namespace muonplan;
using namespace muonplan::test;

TEST_CASE("the context's GPUs per node and limits", "[context]") {
  const Topology topo = h200();  // 8 GPUs of 140.4 GiB, 2048 GiB of host RAM per node
  const ModelSpec s = model("qwen3-8b");
  const PlanOptions o;
  const CandidateContext c = candidate_context(s, topo, o, 16);
  CHECK(c.world == 16);
  CHECK(c.gpus_per_node == 8);
  CHECK(c.gpu_limit_bytes == 140.4 * kGiB);
  CHECK(c.host_limit_bytes == 2048 * kGiB);
  PlanOptions set;
  set.gpus_per_node = 4;
  set.gpu_memory_gib = 80;
  set.host_ram_gib = 512;
  const CandidateContext d = candidate_context(s, topo, set, 16);
  CHECK(d.gpus_per_node == 4);
  CHECK(d.gpu_limit_bytes == 80 * kGiB);
  CHECK(d.host_limit_bytes == 512 * kGiB);
}

TEST_CASE("the context's one Rates: the route's bottleneck between nodes", "[context]") {
  Topology topo = h200();
  const ModelSpec s = model("qwen3-8b");
  const PlanOptions o;
  const double eff = topo.calibration.link_efficiency;
  // One 50 GB/s NIC per GPU: the NIC is the route's narrowest link.
  const CandidateContext c = candidate_context(s, topo, o, 16);
  CHECK(c.rates.inter_bps == Approx(50 * kGB * eff));
  CHECK(c.rates.intra_bps > c.rates.inter_bps);  // NVLink
  // 400 GB/s NICs: the GPU's PCIe link to its NIC is now the bottleneck, and the training
  // step's traffic runs at it too (workload_cost.cc once took the NIC's rate alone).
  topo.node.nic_gbps = 400;
  const CandidateContext wide = candidate_context(s, topo, o, 16);
  CHECK(wide.rates.inter_bps < 400 * kGB * eff);
  CHECK(wide.rates.inter_bps > c.rates.inter_bps);
  // One GPU per node: no link in the node; its groups are the network's.
  PlanOptions one = o;
  one.gpus_per_node = 1;
  const CandidateContext single = candidate_context(s, topo, one, 4);
  CHECK(single.rates.intra_bps == single.rates.inter_bps);
  // The AC offload's buffers are pinned; staged optimizer state crosses pageable memory.
  PlanOptions staged = o;
  staged.offload = OffloadMode::optimizer;
  const CandidateContext st = candidate_context(s, topo, staged, 8);
  CHECK(st.rates.d2h_bps ==
        Approx(topo.node.pcie_pageable_gbps * kGB * topo.calibration.pcie_efficiency));
  CHECK(st.rates.pinned_d2h_bps ==
        Approx(topo.node.pcie_d2h_gbps * kGB * topo.calibration.pcie_efficiency));
  CHECK(st.rates.pinned_h2d_bps ==
        Approx(topo.node.pcie_h2d_gbps * kGB * topo.calibration.pcie_efficiency));
}

TEST_CASE("the context's top-k and vocabulary block", "[context]") {
  const Topology topo = h200();
  const PlanOptions o;
  CHECK(candidate_context(model("qwen3-8b"), topo, o, 8).top_k == 1);           // dense
  CHECK(candidate_context(model("qwen3-30b-a3b"), topo, o, 8).top_k == 8);      // 8 of 128 experts
  CHECK(candidate_context(model("qwen3-8b"), topo, o, 8).vocab_block == 8192);  // 151936 entries
  CHECK(candidate_context(model("tiny-dense"), topo, o, 8).vocab_block == 1000);  // 1000 entries
}

TEST_CASE("bytes per element from step_buffers.h, on the device and the host", "[context]") {
  PlanOptions o;
  ElemBytes b = elem_bytes_of(o);  // float32
  CHECK(b.master == elem_bytes::kMaster);
  CHECK(b.muon_state == elem_bytes::kMomentumF32);
  CHECK(b.adamw_state == elem_bytes::kMomentumF32 + elem_bytes::kSecondMoment);
  CHECK(b.host_fold == 8);     // read + write the fp32 momentum
  CHECK(b.host_update == 26);  // read + write p, m, v (24) and the bf16 copy (2)
  // With the fp32 gradient read, the optimizer step's host AdamW pass: 30 B (chunk_costs.cc).
  CHECK(elem_bytes::kGrad + b.host_update == 30);
  o.bf16_momentum = true;
  b = elem_bytes_of(o);
  CHECK(b.muon_state == elem_bytes::kMomentumBf16);
  CHECK(b.host_fold == 4);
  CHECK(b.host_update == 26);  // AdamW's moments stay fp32
  // optimization_dtype bfloat16: masters and every state array bf16 (zeros_like the master),
  // the Muon fold 4 B and the host update 2 x (2 + 4) + 2 = 14 B, where the training step's
  // model once took 8 B and 26 B.
  o.bf16_momentum = false;
  o.workload = Workload{};
  o.workload->master_bytes = 2;
  b = elem_bytes_of(o);
  CHECK(b.master == 2);
  CHECK(b.muon_state == 2);
  CHECK(b.adamw_state == 4);
  CHECK(b.host_fold == 4);
  CHECK(b.host_update == 14);
  // signSGD keeps no state: read + write the fp32 master and the bf16 copy, 10 B.
  o.workload.reset();
  o.optimizer = OptimizerKind::signsgd;
  b = elem_bytes_of(o);
  CHECK(b.adamw_state == 0);
  CHECK(b.host_update == 10);
}
