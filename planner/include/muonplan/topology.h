// Topology: the cluster the plan runs on (docs/topology.md), and the graph of its devices and
// links used to find the route and bottleneck bandwidth between any two endpoints.
// Bandwidths are GB/s (1e9 bytes per second) per direction; latencies are microseconds.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace muonplan {

struct GpuSpec {
  std::string name;
  double memory_gib = 0;   // as the device reports it (total, before the CUDA context)
  double bf16_tflops = 0;  // dense bf16 tensor-core peak, TFLOP/s
  double hbm_gbps = 0;     // HBM bandwidth
  int sm_count = 0;        // streaming multiprocessors: the GEMM wave-quantization model uses it
};

struct NodeSpec {
  int gpus = 0;
  GpuSpec gpu;
  double nvlink_gbps = 0;  // per GPU per direction into the NVSwitch fabric; 0: no NVLink
  double nvlink_latency_us = 0;
  double pcie_h2d_gbps = 0;       // host to one GPU, pinned host memory
  double pcie_d2h_gbps = 0;       // one GPU to host, pinned host memory
  double pcie_pageable_gbps = 0;  // either direction through pageable host memory
  int gpus_per_pcie_switch = 1;
  double pcie_latency_us = 0;
  int nics = 0;
  double nic_gbps = 0;  // per NIC per direction
  double nic_latency_us = 0;
  double host_ram_gib = 0;   // per node
  double host_mem_gbps = 0;  // per node, STREAM-like achievable
  int cpu_cores = 0;         // per node
};

// Fixed costs the cost model adds on top of what the tensors need.
struct Overheads {
  double cuda_context_gib = 0;          // per GPU, outside the allocator's view
  double allocator_slack_fraction = 0;  // fragmentation reserve on top of allocated GPU bytes
  double host_per_process_gib = 0;      // per rank: runtime, libraries, CUDA host allocations
};

// Calibratable constants of the time model (docs/planner.md). `muonplan calibrate` fits them.
struct Calibration {
  double gemm_efficiency_max = 0.75;  // sustained fraction of bf16 peak for large GEMMs
  double gemm_k_overhead = 384;       // per-tile fixed cost in K elements: eff *= K/(K+this)
  int gemm_tile_m = 128;              // output tile of the GEMM kernels (wave quantization)
  int gemm_tile_n = 256;
  double kernel_launch_us = 4;
  double hbm_efficiency = 0.9;   // achievable fraction of hbm_gbps
  double link_efficiency = 0.8;  // achievable fraction of link bandwidth in collectives
  // Fixed cost of one all-to-all beyond the route's latency: launch, synchronization, progress
  // (0: not modeled; `muonplan calibrate` fits it where runs show it, as on CPU ranks).
  double collective_us = 0;
  double pcie_efficiency = 1.0;          // pcie_* figures are already measured rates
  double host_kernel_efficiency = 0.8;   // CPU optimizer kernels' fraction of host_mem_gbps
  double model_flops_utilization = 0.4;  // training-step compute at this fraction of peak
  // Fractions of the expert-parallel dispatch/combine and of the Ulysses context-parallel
  // all-to-alls that run under compute (0: the trainer waits for each, as synchronous
  // all-to-alls do; ring attention hides its hops behind attention compute by design).
  double ep_comm_overlap = 0;
  double cp_comm_overlap = 0;
};

struct Topology {
  std::string name;
  std::string source_path;
  int max_nodes = 1;  // nodes available; --nodes auto searches 1..max_nodes
  NodeSpec node;
  double fabric_latency_us = 0;
  Overheads overheads;
  Calibration calibration;
};

// Throws InputError ("FILE:LINE:COL: field: what is wrong") on any bad field.
Topology load_topology(const std::string& path);
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

}  // namespace muonplan
