// The device graph of a topology (docs/topology.md) and its widest-route query.
#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <limits>
#include <queue>
#include <stdexcept>
#include <unordered_map>

#include "muonplan/base/error.h"
#include "muonplan/planner/topology.h"
#include "muonplan/planner/topology_nodes.h"

namespace muonplan {

const char* to_string(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::gpu:
      return "gpu";
    case DeviceKind::pcie_switch:
      return "pcie_switch";
    case DeviceKind::host_memory:
      return "host_memory";
    case DeviceKind::nic:
      return "nic";
    case DeviceKind::nvswitch:
      return "nvswitch";
    case DeviceKind::fabric:
      return "fabric";
  }
  return "?";
}

// Named, not anonymous: TopologyGraph::Impl holds these, and a class with external linkage may
// not hold types with internal linkage once this file is compiled inside another (a unity build).
namespace topology_graph_detail {

struct Link {
  double gbps = 0;  // per direction
  double latency_us = 0;
};

// Undirected edges: every link here has the same bandwidth both ways.
using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, Device, Link>;
using Vertex = Graph::vertex_descriptor;

struct NodeDevices {
  std::vector<int> gpus, pcie_switches, nics;
  int host = -1;
  int nvswitch = -1;
};

}  // namespace topology_graph_detail

namespace {

using topology_graph_detail::Graph;
using topology_graph_detail::Link;
using topology_graph_detail::NodeDevices;
using topology_graph_detail::Vertex;

// Switches forward traffic; GPUs and host memory only send and receive it.
bool is_endpoint_only(DeviceKind kind) {
  return kind == DeviceKind::gpu || kind == DeviceKind::host_memory;
}

}  // namespace

struct TopologyGraph::Impl {
  Graph graph;
  std::vector<NodeDevices> nodes;
  int fabric = -1;
  double fabric_latency_us = 0;
  std::unordered_map<std::string, int> by_name;

  int add(DeviceKind kind, int node, int index, const std::string& name) {
    const int id = static_cast<int>(boost::add_vertex(Device{kind, node, index, name}, graph));
    by_name[name] = id;
    return id;
  }
  void link(int a, int b, double gbps, double latency_us) {
    boost::add_edge(a, b, Link{gbps, latency_us}, graph);
  }
  // Latency a route pays to cross this device (not to end at it): the fabric's switch hops.
  double transit_us(int id) const { return id == fabric ? fabric_latency_us : 0; }
  bool may_forward(int id, int from) const {
    return id == from || !is_endpoint_only(graph[id].kind);
  }
  double widest_bottleneck(int from, int to) const;
  Route lowest_latency(int from, int to, double min_gbps) const;
};

void check_node_count(int64_t nodes, const Topology& topology, const std::string& field) {
  if (nodes >= 1 && nodes <= topology.max_nodes) return;
  throw InputError({}, field,
                   "must be between 1 and max_nodes (" + std::to_string(topology.max_nodes) +
                       ") of topology " + topology.name + ", got " + std::to_string(nodes));
}

TopologyGraph::TopologyGraph(const Topology& topology, int nodes)
    : impl_(std::make_unique<Impl>()) {
  check_node_count(nodes, topology, "nodes");
  const NodeSpec& spec = topology.node;
  const double pcie_gbps = std::min(spec.pcie_h2d_gbps, spec.pcie_d2h_gbps);
  const int switches = spec.gpus / spec.gpus_per_pcie_switch;
  Impl& g = *impl_;
  g.fabric_latency_us = topology.fabric_latency_us;
  for (int n = 0; n < nodes; ++n) {
    const std::string prefix = "n" + std::to_string(n) + ".";
    NodeDevices d;
    for (int i = 0; i < spec.gpus; ++i) {
      d.gpus.push_back(g.add(DeviceKind::gpu, n, i, prefix + "gpu" + std::to_string(i)));
    }
    d.host = g.add(DeviceKind::host_memory, n, 0, prefix + "host");
    for (int s = 0; s < switches; ++s) {
      const int sw = g.add(DeviceKind::pcie_switch, n, s, prefix + "pcie" + std::to_string(s));
      d.pcie_switches.push_back(sw);
      // The uplink carries every GPU of the switch at full rate: it is not the bottleneck.
      g.link(sw, d.host, pcie_gbps * spec.gpus_per_pcie_switch, spec.pcie_latency_us);
      for (int k = 0; k < spec.gpus_per_pcie_switch; ++k) {
        g.link(d.gpus[s * spec.gpus_per_pcie_switch + k], sw, pcie_gbps, spec.pcie_latency_us);
      }
    }
    // The loader guarantees nics is a multiple of the switch count: consecutive NICs share a
    // switch, so with one NIC per GPU, nic i sits beside gpu i.
    for (int i = 0; i < spec.nics; ++i) {
      d.nics.push_back(g.add(DeviceKind::nic, n, i, prefix + "nic" + std::to_string(i)));
      g.link(d.nics.back(), d.pcie_switches[i * switches / spec.nics], pcie_gbps,
             spec.pcie_latency_us);
    }
    if (spec.nvlink_gbps > 0) {
      d.nvswitch = g.add(DeviceKind::nvswitch, n, 0, prefix + "nvswitch");
      for (int gpu : d.gpus) g.link(gpu, d.nvswitch, spec.nvlink_gbps, spec.nvlink_latency_us);
    }
    g.nodes.push_back(std::move(d));
  }
  if (nodes > 1) {
    g.fabric = g.add(DeviceKind::fabric, -1, 0, "fabric");
    for (const NodeDevices& d : g.nodes) {
      for (int nic : d.nics) g.link(nic, g.fabric, spec.nic_gbps, spec.nic_latency_us);
    }
  }
}

TopologyGraph::~TopologyGraph() = default;
TopologyGraph::TopologyGraph(TopologyGraph&&) noexcept = default;

int TopologyGraph::num_devices() const {
  return static_cast<int>(boost::num_vertices(impl_->graph));
}
int TopologyGraph::num_nodes() const {
  return static_cast<int>(impl_->nodes.size());
}

const Device& TopologyGraph::device(int id) const {
  if (id < 0 || id >= num_devices()) throw std::out_of_range("no device " + std::to_string(id));
  return impl_->graph[static_cast<Vertex>(id)];
}

int TopologyGraph::gpu(int node, int local) const {
  return impl_->nodes.at(node).gpus.at(local);
}
int TopologyGraph::host(int node) const {
  return impl_->nodes.at(node).host;
}
int TopologyGraph::nic(int node, int index) const {
  return impl_->nodes.at(node).nics.at(index);
}
int TopologyGraph::pcie_switch(int node, int index) const {
  return impl_->nodes.at(node).pcie_switches.at(index);
}
int TopologyGraph::nvswitch(int node) const {
  return impl_->nodes.at(node).nvswitch;
}
int TopologyGraph::fabric() const {
  return impl_->fabric;
}

int TopologyGraph::find(const std::string& name) const {
  const auto it = impl_->by_name.find(name);
  return it == impl_->by_name.end() ? -1 : it->second;
}

// Widest path: Dijkstra with max-of-min in place of min-of-sum.
double TopologyGraph::Impl::widest_bottleneck(int from, int to) const {
  std::vector<double> width(boost::num_vertices(graph), 0);
  std::priority_queue<std::pair<double, int>> queue;
  width[from] = std::numeric_limits<double>::infinity();
  queue.push({width[from], from});
  while (!queue.empty()) {
    const auto [w, v] = queue.top();
    queue.pop();
    if (w < width[v]) continue;
    if (v == to) return w;
    if (!may_forward(v, from)) continue;
    for (const auto& e : boost::make_iterator_range(boost::out_edges(v, graph))) {
      const int u = static_cast<int>(boost::target(e, graph));
      const double through = std::min(w, graph[e].gbps);
      if (through > width[u]) {
        width[u] = through;
        queue.push({through, u});
      }
    }
  }
  return 0;
}

// Shortest latency over links at least min_gbps wide.
Route TopologyGraph::Impl::lowest_latency(int from, int to, double min_gbps) const {
  const double inf = std::numeric_limits<double>::infinity();
  const size_t n = boost::num_vertices(graph);
  std::vector<double> latency(n, inf);
  std::vector<int> previous(n, -1);
  using Entry = std::pair<double, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  latency[from] = 0;
  queue.push({0, from});
  while (!queue.empty()) {
    const auto [l, v] = queue.top();
    queue.pop();
    if (l > latency[v]) continue;
    if (v == to) break;
    if (!may_forward(v, from)) continue;
    const double base = l + (v == from ? 0 : transit_us(v));
    for (const auto& e : boost::make_iterator_range(boost::out_edges(v, graph))) {
      if (graph[e].gbps < min_gbps) continue;
      const int u = static_cast<int>(boost::target(e, graph));
      if (base + graph[e].latency_us < latency[u]) {
        latency[u] = base + graph[e].latency_us;
        previous[u] = v;
        queue.push({latency[u], u});
      }
    }
  }
  Route route;
  route.bottleneck_gbps = min_gbps;
  route.latency_us = latency[to];
  for (int v = to; v != -1; v = previous[v]) route.devices.push_back(v);
  std::reverse(route.devices.begin(), route.devices.end());
  return route;
}

// Two passes rather than one Dijkstra on (width, latency) pairs: that order is not preserved
// by extending a path (a narrower link can equalise widths and leave the slower path chosen),
// so the widest width comes first, then the fastest route among links at least that wide.
Route TopologyGraph::route(int from, int to) const {
  device(from);
  device(to);
  if (from == to) return Route{{from}, std::numeric_limits<double>::infinity(), 0};
  const double width = impl_->widest_bottleneck(from, to);
  if (width <= 0) return Route{};
  return impl_->lowest_latency(from, to, width);
}

Topology with_gpus_per_node(const Topology& topology, int gpus_per_node) {
  Topology t = topology;
  t.max_nodes = std::max(2, t.max_nodes);  // two nodes suffice to route inter-node traffic
  t.node.gpus = gpus_per_node;
  t.node.gpus_per_pcie_switch = std::min(topology.node.gpus_per_pcie_switch, gpus_per_node);
  if (gpus_per_node % t.node.gpus_per_pcie_switch != 0) t.node.gpus_per_pcie_switch = 1;
  return t;
}

Route in_node_route(const Topology& topology, int gpus_per_node) {
  const TopologyGraph g(with_gpus_per_node(topology, gpus_per_node), 1);
  // The first GPU and the last: on different switches when the node has several, the slowest
  // pair (every in-node collective spans the node).
  Route r = g.route(g.gpu(0, 0), g.gpu(0, gpus_per_node - 1));
  if (!(r.bottleneck_gbps > 0)) {
    // No NVLink and the two GPUs on different PCIe switches (a node the loader refuses, made here
    // by --gpus-per-node above a switch's GPUs): the next real path is up one switch, through the
    // host's root complex and down the other, which the graph never crosses (host memory is an
    // endpoint). Its rate is the slower PCIe direction; each of the four hops a PCIe hop's latency.
    const double pcie = std::min(topology.node.pcie_h2d_gbps, topology.node.pcie_d2h_gbps);
    if (!(pcie > 0)) {
      throw InputError(
          {}, "node.nvlink",
          "topology " + topology.name +
              " has no route between two GPUs of a node (no NVLink, and no PCIe rate)");
    }
    r = Route{{g.gpu(0, 0), g.gpu(0, gpus_per_node - 1)}, pcie, 4 * topology.node.pcie_latency_us};
  }
  return r;
}

}  // namespace muonplan
