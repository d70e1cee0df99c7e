// muonplan topology: a topology's figures per node and per GPU, its device graph, and routes.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "muonplan/base/error.h"
#include "muonplan/planner/topology.h"
#include "muonplan/planner/topology_nodes.h"

namespace muonplan::cli {
namespace {

struct TopologyOptions {
  std::string topology = default_topology_path();
  int nodes = 0;  // when --nodes is not given: the topology's max_nodes
  std::vector<std::string> route;
  bool json = false;
};

int device_id(const TopologyGraph& g, const std::string& name) {
  const int id = g.find(name);
  if (id < 0) {
    throw InputError({}, "--route",
                     "no device '" + name + "' in " + std::to_string(g.num_nodes()) +
                         " node(s); names look like n0.gpu3, n0.pcie1, n0.nic3, n0.host, "
                         "n0.nvswitch, fabric");
  }
  return id;
}

std::map<std::string, int> device_counts(const TopologyGraph& g) {
  std::map<std::string, int> counts;
  for (int id = 0; id < g.num_devices(); ++id) ++counts[to_string(g.device(id).kind)];
  return counts;
}

nlohmann::json to_json(const Topology& t, const TopologyGraph& g, const Route* route) {
  const NodeSpec& n = t.node;
  nlohmann::json j;
  j["name"] = t.name;
  j["max_nodes"] = t.max_nodes;
  j["nodes"] = g.num_nodes();
  j["gpu"] = {{"name", n.gpu.name},
              {"memory_gib", n.gpu.memory_gib},
              {"bf16_tflops", n.gpu.bf16_tflops},
              {"hbm_gbps", n.gpu.hbm_gbps},
              {"sm_count", n.gpu.sm_count},
              {"nvlink_gbps", n.nvlink_gbps},
              {"pcie_h2d_gbps", n.pcie_h2d_gbps},
              {"pcie_d2h_gbps", n.pcie_d2h_gbps},
              {"pcie_pageable_gbps", n.pcie_pageable_gbps},
              {"nic_gbps", n.nics * n.nic_gbps / n.gpus}};
  j["node"] = {{"gpus", n.gpus},
               {"gpu_memory_gib", n.gpus * n.gpu.memory_gib},
               {"bf16_tflops", n.gpus * n.gpu.bf16_tflops},
               {"host_ram_gib", n.host_ram_gib},
               {"host_mem_gbps", n.host_mem_gbps},
               {"cpu_cores", n.cpu_cores},
               {"pcie_switches", n.gpus / n.gpus_per_pcie_switch},
               {"nics", n.nics},
               {"nic_gbps", n.nics * n.nic_gbps}};
  j["devices"] = device_counts(g);
  if (route) {
    nlohmann::json names = nlohmann::json::array();
    for (int id : route->devices) names.push_back(g.device(id).name);
    j["route"] = {{"devices", names}, {"latency_us", route->latency_us}};
    // JSON has no infinity: a device's route to itself has no bottleneck.
    j["route"]["bottleneck_gbps"] = std::isinf(route->bottleneck_gbps)
                                        ? nlohmann::json()
                                        : nlohmann::json(route->bottleneck_gbps);
  }
  return j;
}

void print_summary(const Topology& t, const TopologyGraph& g) {
  const NodeSpec& n = t.node;
  std::printf("topology %s (%s): %d of at most %d nodes\n", t.name.c_str(), t.source_path.c_str(),
              g.num_nodes(), t.max_nodes);
  std::printf("  per GPU   %s: %.1f GiB, %.1f bf16 TFLOP/s, HBM %.0f GB/s, %d SMs\n",
              n.gpu.name.c_str(), n.gpu.memory_gib, n.gpu.bf16_tflops, n.gpu.hbm_gbps,
              n.gpu.sm_count);
  if (n.nvlink_gbps > 0) {
    std::printf("            NVLink %.0f GB/s per direction\n", n.nvlink_gbps);
  } else {
    std::printf("            no NVLink\n");
  }
  std::printf("            PCIe h2d %.0f, d2h %.0f, pageable %.0f GB/s; network %.1f GB/s\n",
              n.pcie_h2d_gbps, n.pcie_d2h_gbps, n.pcie_pageable_gbps, n.nics * n.nic_gbps / n.gpus);
  std::printf(
      "  per node  %d GPUs (%.1f GiB, %.1f bf16 TFLOP/s), %d PCIe switches, %d NICs x "
      "%.0f GB/s\n",
      n.gpus, n.gpus * n.gpu.memory_gib, n.gpus * n.gpu.bf16_tflops,
      n.gpus / n.gpus_per_pcie_switch, n.nics, n.nic_gbps);
  std::printf("            host %.0f GiB RAM at %.0f GB/s, %d CPU cores\n", n.host_ram_gib,
              n.host_mem_gbps, n.cpu_cores);
  std::printf("  devices   %d:", g.num_devices());
  for (const auto& [kind, count] : device_counts(g)) std::printf(" %d %s", count, kind.c_str());
  std::printf("\n");
}

void print_route(const TopologyGraph& g, const Route& r) {
  if (r.devices.empty()) {
    std::printf("route: none (GPUs and host memory never forward traffic)\n");
    return;
  }
  std::printf("route:");
  for (size_t i = 0; i < r.devices.size(); ++i) {
    std::printf("%s%s", i == 0 ? " " : " -> ", g.device(r.devices[i]).name.c_str());
  }
  std::printf("\n  bottleneck %.1f GB/s, latency %.2f us\n", r.bottleneck_gbps, r.latency_us);
}

}  // namespace

Runner add_topology(CLI::App& app) {
  auto opts = std::make_shared<TopologyOptions>();
  CLI::App* cmd = app.add_subcommand("topology", "Summarize a topology and query routes");
  cmd->add_option("--topology", opts->topology, "YAML topology (topologies/*.yaml)")
      ->capture_default_str();
  CLI::Option* nodes_flag =
      cmd->add_option("--nodes", opts->nodes, "Nodes in the device graph (default: max_nodes)");
  cmd->add_option("--route", opts->route, "Route between two devices, e.g. n0.gpu0 n1.gpu3")
      ->expected(2);
  cmd->add_flag("--json", opts->json, "Machine-readable output on stdout");
  return [opts, nodes_flag]() {
    const Topology t = load_topology(opts->topology);
    const int nodes = nodes_flag->count() > 0 ? opts->nodes : t.max_nodes;
    check_node_count(nodes, t, "--nodes");
    const TopologyGraph g(t, nodes);
    std::optional<Route> route;
    if (!opts->route.empty()) {
      route = g.route(device_id(g, opts->route[0]), device_id(g, opts->route[1]));
    }
    if (opts->json) {
      std::cout << to_json(t, g, route ? &*route : nullptr).dump(2) << "\n";
      return 0;
    }
    print_summary(t, g);
    if (route) print_route(g, *route);
    return 0;
  };
}

}  // namespace muonplan::cli
