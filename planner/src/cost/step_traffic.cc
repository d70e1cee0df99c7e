// Rates of the step's resources and one Muon batch's exchange (step_traffic.h).
#include "cost/step_traffic.h"

#include <algorithm>

#include "muonplan/offload_policy.h"
#include "muonplan/owners.h"
#include "muonplan/base/units.h"

namespace muonplan::step_cost {
Rates rates(const Topology& topo, const PlanOptions& o, int gpus_per_node) {
  const Calibration& c = topo.calibration;
  const NodeSpec& n = topo.node;
  Rates r{};
  r.hbm_bps = n.gpu.hbm_gbps * kGB * c.hbm_efficiency;
  r.collective_s = c.collective_us * 1e-6;
  // Each rank runs on its GPU's socket: a socket's share of the bandwidth over its ranks.
  const int sockets = std::max(1, std::min(n.cpu_sockets, gpus_per_node));
  const int ranks_per_socket = (gpus_per_node + sockets - 1) / sockets;
  const double host_eff = o.runtime == RuntimeKind::pytorch ? topo.pytorch.host_pass_efficiency
                                                            : c.host_kernel_efficiency;
  r.cpu_bps_per_rank = n.host_mem_gbps / sockets * kGB * host_eff / ranks_per_socket;
  // Staged optimizer state crosses PCIe through pageable memory unless asked pinned.
  const bool pageable =
      offload_policy(o.offload, o.optimizer_staging).staging != OffloadStaging::none &&
      !o.pinned_host_state;
  r.h2d_bps = (pageable ? n.pcie_pageable_gbps : n.pcie_h2d_gbps) * kGB * c.pcie_efficiency;
  r.d2h_bps = (pageable ? n.pcie_pageable_gbps : n.pcie_d2h_gbps) * kGB * c.pcie_efficiency;
  Topology t = topo;
  t.max_nodes = std::max(2, t.max_nodes);  // two nodes suffice to route inter-node traffic
  t.node.gpus = gpus_per_node;
  t.node.gpus_per_pcie_switch = std::min(n.gpus_per_pcie_switch, gpus_per_node);
  if (gpus_per_node % t.node.gpus_per_pcie_switch != 0) t.node.gpus_per_pcie_switch = 1;
  const TopologyGraph g(t, 2);
  if (gpus_per_node > 1) {
    const Route in = g.route(g.gpu(0, 0), g.gpu(0, 1));
    r.intra_bps = in.bottleneck_gbps * kGB * c.link_efficiency;
    r.intra_latency_s = in.latency_us * 1e-6;
  }
  const Route out = g.route(g.gpu(0, 0), g.gpu(1, 0));
  // A NIC shared by several GPUs splits its bandwidth among them.
  const double nic_share = n.nics >= gpus_per_node ? 1.0 : double(n.nics) / gpus_per_node;
  r.inter_bps = std::min(out.bottleneck_gbps, n.nic_gbps * nic_share) * kGB * c.link_efficiency;
  r.inter_latency_s = out.latency_us * 1e-6;
  return r;
}

BatchTraffic batch_traffic(const ParamInventory& inv, const Chunk& c, const Rates& rt,
                           int gpus_per_node) {
  BatchTraffic bt;
  const int g = c.group_size;
  bt.held_elems.assign(g, 0);
  bt.buffer_elems.assign(g, 0);
  bt.largest_slice.assign(g, 0);
  bt.owns.assign(g, 0);
  // Exchange 1 bytes per rank, split by link; exchange 2 is its mirror image (send <-> recv).
  // Only the ranks holding a slice of a matrix are visited (detail::holders).
  std::vector<double> send_in(g, 0), send_out(g, 0), recv_in(g, 0), recv_out(g, 0);
  for (size_t k = 0; k < c.owners.size(); ++k) {
    const MatrixRef& m = c.matrices[std::min(k, c.matrices.size() - 1)];
    const int owner = c.owners[k];
    bt.owns[owner] = 1;
    const Range h = detail::holders(inv, m, g);
    for (int64_t rr = h.begin; rr < h.end; ++rr) {
      const int r = int(rr);
      const double b = detail::slice_bytes(inv, m, g, r);
      bt.buffer_elems[r] += b / 2;
      if (k < c.matrices.size()) {
        bt.held_elems[r] += b / 2;
        bt.largest_slice[r] = std::max(bt.largest_slice[r], b / 2);
      }
      if (r == owner) continue;
      const bool same_node = r / gpus_per_node == owner / gpus_per_node;
      (same_node ? send_in : send_out)[r] += b;
      (same_node ? recv_in : recv_out)[owner] += b;
    }
  }
  bool any_inter = false;
  for (int r = 0; r < g; ++r) {
    // Links are full duplex: a rank's time is its busier direction on its busier link.
    const double in = std::max(send_in[r], recv_in[r]), out = std::max(send_out[r], recv_out[r]);
    const double t = std::max(rt.intra_bps > 0 ? in / rt.intra_bps : 0.0, out / rt.inter_bps);
    bt.exchange_s = std::max(bt.exchange_s, t);
    any_inter = any_inter || out > 0;
  }
  bt.exchange_s += (any_inter ? rt.inter_latency_s : rt.intra_latency_s) + rt.collective_s;
  return bt;
}

}  // namespace muonplan::step_cost
