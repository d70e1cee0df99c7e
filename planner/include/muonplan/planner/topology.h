// Topology: the cluster the plan runs on (docs/topology.md), and the graph of its devices and
// links used to find the route and bottleneck bandwidth between any two endpoints.
// Bandwidths are GB/s (1e9 bytes per second) per direction; latencies are microseconds.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "muonplan/planfile/topology_spec.h"

namespace muonplan {

// A topology file, or a bundled topology's name (h200-ib, h100-ib, b200-ib, a100-ib,
// rtx-a6000: topologies/NAME.yaml in the data directory) as --model takes a bundled name: the
// path to read. A path that exists, or that names a .yaml file, is taken as written.
std::string resolve_topology_path(const std::string& path_or_name);
// Throws InputError ("FILE:LINE:COL: field: what is wrong") on any bad field.
Topology load_topology(const std::string& path_or_name);
Topology parse_topology(const std::string& text, const std::string& path_for_errors);

enum class DeviceKind { gpu, pcie_switch, host_memory, nic, nvswitch, fabric };
const char* to_string(DeviceKind kind);

struct Device {
  DeviceKind kind;
  int node = -1;     // -1 for the fabric
  int index = 0;     // within its kind on its node
  std::string name;  // e.g. "n0.gpu3", "n1.nic0", "fabric"
};

struct Route {
  std::vector<int> devices;    // endpoints included, in order
  double bottleneck_gbps = 0;  // min over the route's links
  double latency_us = 0;       // sum over the route's links, plus the fabric's if crossed
};

// The devices of `nodes` nodes and their links, as a Boost.Graph (implementation detail).
// GPUs of a node meet at the NVSwitch; each GPU, its NIC share a PCIe switch that connects to
// host memory; NICs meet at the fabric.
class TopologyGraph {
 public:
  // Throws InputError unless 1 <= nodes <= topology.max_nodes.
  TopologyGraph(const Topology& topology, int nodes);
  ~TopologyGraph();
  TopologyGraph(TopologyGraph&&) noexcept;

  int num_devices() const;
  int num_nodes() const;
  const Device& device(int id) const;  // std::out_of_range for a bad id, as are the lookups below
  int gpu(int node, int local) const;
  int host(int node) const;
  int nic(int node, int index) const;
  int pcie_switch(int node, int index) const;
  int nvswitch(int node) const;             // -1 without NVLink
  int fabric() const;                       // -1 for a single node
  int find(const std::string& name) const;  // -1 if none

  // The widest route (max bottleneck bandwidth), ties broken by lowest latency. GPUs and host
  // memory are endpoints only, never crossed. Crossing the fabric adds fabric_latency_us once.
  // from == to: just that device, infinite bandwidth, zero latency. No route (GPUs on different
  // PCIe switches of a node without NVLink): empty devices, zero bandwidth.
  Route route(int from, int to) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The node a plan runs on: `gpus_per_node` of the topology's GPUs (2 or more), on PCIe switches
// of at most that many (one GPU per switch when the topology's count does not divide it).
Topology with_gpus_per_node(const Topology& topology, int gpus_per_node);

// The route between the first and the last GPU of such a node (the slowest pair), the one every
// in-node figure is timed at: over the NVSwitch, or without NVLink over their shared PCIe switch.
// Throws InputError when there is none (the loader refuses such a node; a topology built in code
// may still lack it), so no figure divides by a bandwidth of zero.
Route in_node_route(const Topology& topology, int gpus_per_node);

}  // namespace muonplan
