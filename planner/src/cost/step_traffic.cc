// Rates of the step's resources and one Muon batch's exchange (step_traffic.h).
#include "cost/step_traffic.h"

#include <algorithm>

#include "muonplan/base/units.h"
#include "muonplan/planfile/offload_policy.h"
#include "muonplan/planner/owners.h"

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
  r.pinned_d2h_bps = n.pcie_d2h_gbps * kGB * c.pcie_efficiency;
  r.pinned_h2d_bps = n.pcie_h2d_gbps * kGB * c.pcie_efficiency;
  const TopologyGraph g(with_gpus_per_node(topo, gpus_per_node), 2);
  if (gpus_per_node > 1) {
    const Route in = in_node_route(topo, gpus_per_node);
    r.intra_bps = in.bottleneck_gbps * kGB * c.link_efficiency;
    r.intra_latency_s = in.latency_us * 1e-6;
  }
  const Route out = g.route(g.gpu(0, 0), g.gpu(1, 0));
  // A NIC shared by several GPUs splits its bandwidth among them.
  const double nic_share = n.nics >= gpus_per_node ? 1.0 : double(n.nics) / gpus_per_node;
  r.inter_bps = std::min(out.bottleneck_gbps, n.nic_gbps * nic_share) * kGB * c.link_efficiency;
  r.inter_latency_s = out.latency_us * 1e-6;
  // Both rates are positive: the loader refuses a zero rate or efficiency, and in_node_route a
  // node whose GPUs have no path between them (no NVLink: their PCIe switch).
  if (gpus_per_node <= 1) r.intra_bps = r.inter_bps;
  return r;
}

namespace {

// Zeroes what the last batch left in `bt` (or sizes it to a new group).
void clear_batch(BatchTraffic& bt, int g) {
  std::vector<double>* per_pos[] = {&bt.held_elems, &bt.buffer_elems, &bt.largest_slice,
                                    &bt.send_in,    &bt.send_out,     &bt.recv_in,
                                    &bt.recv_out};
  if (bt.owns.size() != size_t(g)) {
    for (std::vector<double>* v : per_pos) v->assign(g, 0);
    bt.owns.assign(g, 0);
  } else {
    for (int r : bt.touched) {
      for (std::vector<double>* v : per_pos) (*v)[r] = 0;
      bt.owns[r] = 0;
    }
  }
  bt.touched.clear();
  bt.exchange_s = 0;
}

// Lists position r in bt.touched the first time the batch reaches it. An untouched position
// has no slice and owns nothing (all its figures zero); `owns` is 2 once listed.
void mark(BatchTraffic& bt, int r) {
  if (bt.owns[r] == 0) {
    bt.owns[r] = 2;
    bt.touched.push_back(r);
  }
}

// One group's exchange 1, as the matrix-by-matrix loop would add it: each holder r sends its
// slice b of each matrix it does not own, within its node to owners there (send_in) and to
// the others out of it (send_out); each owner receives every other holder's slice, split
// alike (recv_in, recv_out). Owners sorted, a holder's own count and its node's are runs.
void group_traffic(const ParamInventory& inv, SliceGroup& sg, int g, int gpn, BatchTraffic& bt) {
  std::sort(sg.owners.begin(), sg.owners.end());
  const int all = int(sg.owners.size());
  size_t own_at = 0, node_at = 0;  // first owner >= r, first owner on r's node or after
  double total_b = 0;              // the group's bytes over all holders
  std::vector<std::pair<int, double>>& node_b = bt.node_bytes;  // node -> holders' bytes
  node_b.clear();
  detail::for_each_slice(inv, sg.m, g, [&](int r, double b) {
    mark(bt, r);
    bt.buffer_elems[r] += all * (b / 2);
    if (sg.real > 0) {
      bt.held_elems[r] += sg.real * (b / 2);
      bt.largest_slice[r] = std::max(bt.largest_slice[r], b / 2);
    }
    const int node = r / gpn;
    while (node_at < sg.owners.size() && sg.owners[node_at] / gpn < node) ++node_at;
    size_t node_end = node_at;
    while (node_end < sg.owners.size() && sg.owners[node_end] / gpn == node) ++node_end;
    while (own_at < sg.owners.size() && sg.owners[own_at] < r) ++own_at;
    size_t own_end = own_at;
    while (own_end < sg.owners.size() && sg.owners[own_end] == r) ++own_end;
    const int on_node = int(node_end - node_at), own = int(own_end - own_at);
    bt.send_in[r] += (on_node - own) * b;
    bt.send_out[r] += (all - on_node) * b;
    total_b += b;
    if (node_b.empty() || node_b.back().first != node) node_b.push_back({node, 0.0});
    node_b.back().second += b;
  });
  for (int o : sg.owners) {
    const int node = o / gpn;
    const auto it =
        std::lower_bound(node_b.begin(), node_b.end(), std::pair<int, double>{node, -1.0});
    const double on_node_b = it != node_b.end() && it->first == node ? it->second : 0.0;
    const double own_b = detail::slice_bytes(inv, sg.m, g, o);
    bt.recv_in[o] += on_node_b - own_b;
    bt.recv_out[o] += total_b - on_node_b;
  }
}

}  // namespace

double BatchTraffic::max_held_elems() const {
  double best = 0;  // the untouched positions' (held_elems is never negative)
  for (int r : touched) best = std::max(best, held_elems[r]);
  return best;
}

void batch_traffic(const ParamInventory& inv, const Chunk& c, const Rates& rt, int gpus_per_node,
                   BatchTraffic& bt) {
  const int g = c.group_size;
  clear_batch(bt, g);
  // Matrices sliced alike (SliceGroup) give each holder the same slice, so a group visits its
  // holders once whatever its size (a batch of one shape is usually one group of up to g
  // matrices). Every figure is a sum of whole bytes, integers far below 2^53 in doubles, so
  // the sums are exactly those taken matrix by matrix, in any order.
  std::vector<SliceGroup>& groups = bt.groups;
  groups.clear();
  for (size_t k = 0; k < c.owners.size(); ++k) {
    // Padding matrices have the shape and sharding of the batch's last real matrix.
    const MatrixRef& m = c.matrices[std::min(k, c.matrices.size() - 1)];
    const int64_t n = inv.tensors[m.tensor].shape[0];
    auto it = std::find_if(groups.begin(), groups.end(), [&](const SliceGroup& sg) {
      return sg.n == n && sg.m.row_offset == m.row_offset && sg.m.rows == m.rows &&
             sg.m.cols == m.cols;
    });
    if (it == groups.end()) it = groups.insert(groups.end(), SliceGroup{m, n, 0, {}});
    it->real += k < c.matrices.size();
    it->owners.push_back(c.owners[k]);
    mark(bt, c.owners[k]);
  }
  for (SliceGroup& sg : groups) group_traffic(inv, sg, g, gpus_per_node, bt);
  // Owners are the positions owns[] marked 3 (2: listed, +1: owner).
  for (int o : c.owners) bt.owns[o] = 3;
  bool any_inter = false;
  for (int r : bt.touched) {
    bt.owns[r] = bt.owns[r] == 3;  // back to 0/1: whether r owns a matrix
    // Links are full duplex: a rank's time is its busier direction on its busier link.
    const double in = std::max(bt.send_in[r], bt.recv_in[r]),
                 out = std::max(bt.send_out[r], bt.recv_out[r]);
    const double t = std::max(rt.intra_bps > 0 ? in / rt.intra_bps : 0.0, out / rt.inter_bps);
    bt.exchange_s = std::max(bt.exchange_s, t);
    any_inter = any_inter || out > 0;
  }
  bt.exchange_s += (any_inter ? rt.inter_latency_s : rt.intra_latency_s) + rt.collective_s;
}

}  // namespace muonplan::step_cost
