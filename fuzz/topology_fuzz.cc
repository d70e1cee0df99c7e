// Fuzzes the topology loader (parse_topology) and, for a topology that loads, the device graph
// of up to two nodes and a route across it. InputError is the documented rejection; anything
// else (a crash, a sanitizer report, another exception type) is a finding.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "muonplan/base/error.h"
#include "muonplan/planner/topology.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const muonplan::Topology topo = muonplan::parse_topology(text, "fuzz.yaml");
    // Two nodes at most: the graph grows with the node count, the loader's checks do not.
    const int nodes = std::min(topo.max_nodes, 2);
    const muonplan::TopologyGraph graph(topo, nodes);
    const int last_gpu = graph.gpu(nodes - 1, topo.node.gpus - 1);
    graph.route(graph.gpu(0, 0), last_gpu);
    graph.route(graph.host(0), last_gpu);
  } catch (const muonplan::InputError&) {
  }
  return 0;
}
