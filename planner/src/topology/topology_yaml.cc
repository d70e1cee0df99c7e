// Our YAML topology format (docs/topology.md) and the checks every topology must pass.
#include <cmath>
#include <tuple>

#include <filesystem>

#include "muonplan/base/error.h"
#include "muonplan/base/io.h"
#include "muonplan/base/units.h"
#include "muonplan/planfile/plan_checks.h"
#include "muonplan/planner/data_dir.h"
#include "muonplan/planner/topology.h"
#include "muonplan/planner/yaml_reader.h"

namespace muonplan {

using detail::YamlMap;

namespace {

// Counts beyond these are typos (a GiB figure in a count field), not clusters we plan for.
constexpr int64_t kMaxNodes = 100000;
constexpr int64_t kMaxNicsPerNode = 1024;
constexpr int64_t kMaxSmCount = 100000;
constexpr int64_t kMaxCpuCores = 1000000;
constexpr int64_t kMaxGemmTile = 4096;
// The device graph of max_nodes nodes (`muonplan topology`) grows with their GPUs and NICs, and
// no plan uses more ranks than the search's bound (search.cc): refuse more before allocating.

// The number as written in the file, so messages quote the user's text ("got -1", not -1.000000).
std::string as_written(const YamlMap& m, const std::string& key) {
  return m.raw(key).Scalar();
}

int count(const YamlMap& m, const std::string& key, int64_t max) {
  const int64_t v = m.get_int(key);
  if (v <= 0) m.fail(key, "must be positive, got " + std::to_string(v));
  if (v > max) {
    m.fail(key, "must be at most " + std::to_string(max) + ", got " + std::to_string(v));
  }
  return static_cast<int>(v);
}

int count(const YamlMap& m, const std::string& key, int64_t max, int fallback) {
  return m.has(key) ? count(m, key, max) : fallback;
}

double positive_number(const YamlMap& m, const std::string& key) {
  const double v = m.get_double(key);
  if (v <= 0) m.fail(key, "must be positive, got " + as_written(m, key));
  return v;
}

double non_negative_number(const YamlMap& m, const std::string& key) {
  const double v = m.get_double(key);
  if (v < 0) m.fail(key, "must not be negative, got " + as_written(m, key));
  return v;
}

double non_negative_number(const YamlMap& m, const std::string& key, double fallback) {
  return m.has(key) ? non_negative_number(m, key) : fallback;
}

// An achievable fraction of a peak: zero would make every time infinite, above one is a typo.
double efficiency(const YamlMap& m, const std::string& key, double fallback) {
  if (!m.has(key)) return fallback;
  const double v = m.get_double(key);
  if (v <= 0 || v > 1) m.fail(key, "must be in (0, 1], got " + as_written(m, key));
  return v;
}

// Each reader refuses unknown fields first, so a misspelt field is reported where it is written
// rather than as the correctly spelt one missing.

void read_gpu(const YamlMap& m, GpuSpec& g) {
  m.check_known(
      {"name", "memory_gib", "bf16_tflops", "hbm_gbps", "sm_count", "compute_capability"});
  g.name = m.get_string("name");
  if (const std::string why = name_problem(g.name); !why.empty()) m.fail("name", why);
  g.memory_gib = positive_number(m, "memory_gib");
  if (const std::string why = memory_gib_problem(g.memory_gib); !why.empty())
    m.fail("memory_gib", why);
  g.bf16_tflops = positive_number(m, "bf16_tflops");
  g.hbm_gbps = positive_number(m, "hbm_gbps");
  g.sm_count = count(m, "sm_count", kMaxSmCount);
  g.compute_capability = non_negative_number(m, "compute_capability", 0);
  if (g.compute_capability > 20)
    m.fail("compute_capability",
           "is major.minor (e.g. 9.0), got " + as_written(m, "compute_capability"));
}

void read_pcie(const YamlMap& m, NodeSpec& n) {
  m.check_known({"h2d_gbps", "d2h_gbps", "pageable_gbps", "gpus_per_switch", "latency_us"});
  n.pcie_h2d_gbps = positive_number(m, "h2d_gbps");
  n.pcie_d2h_gbps = positive_number(m, "d2h_gbps");
  n.pcie_pageable_gbps = positive_number(m, "pageable_gbps");
  n.gpus_per_pcie_switch = count(m, "gpus_per_switch", kMaxGpusPerNode, 1);
  if (n.gpus % n.gpus_per_pcie_switch != 0) {
    m.fail("gpus_per_switch", "must divide node.gpus (" + std::to_string(n.gpus) + "), got " +
                                  std::to_string(n.gpus_per_pcie_switch));
  }
  n.pcie_latency_us = non_negative_number(m, "latency_us");
}

void read_nics(const YamlMap& m, NodeSpec& n) {
  m.check_known({"count", "gbps", "latency_us"});
  n.nics = count(m, "count", kMaxNicsPerNode);
  // Every PCIe switch needs its own NICs: a route never crosses host memory (docs/topology.md),
  // so a switch without one would leave its GPUs with no way off the node.
  const int switches = n.gpus / n.gpus_per_pcie_switch;
  if (n.nics % switches != 0) {
    m.fail("count", "must be a multiple of the PCIe switch count (" + std::to_string(switches) +
                        " = node.gpus / pcie.gpus_per_switch), got " + std::to_string(n.nics));
  }
  n.nic_gbps = positive_number(m, "gbps");
  n.nic_latency_us = non_negative_number(m, "latency_us");
}

void read_node(const YamlMap& m, NodeSpec& n) {
  m.check_known({"device", "gpus", "gpu", "nvlink", "pcie", "nics", "host"});
  const std::string device = m.get_string("device", "gpu");
  if (device != "gpu" && device != "cpu")
    m.fail("device", "must be gpu or cpu, got '" + printable(device) + "'");
  n.cpu_ranks = device == "cpu";
  n.gpus = count(m, "gpus", kMaxGpusPerNode);
  read_gpu(m.get_map("gpu"), n.gpu);
  if (auto nv = m.get_optional_map("nvlink")) {
    nv->check_known({"gbps", "latency_us"});
    n.nvlink_gbps = positive_number(*nv, "gbps");
    n.nvlink_latency_us = non_negative_number(*nv, "latency_us");
  }
  read_pcie(m.get_map("pcie"), n);
  // Without NVLink, GPUs meet only at a PCIe switch; across switches their traffic would cross
  // host memory, which the graph does not route (docs/topology.md), so every in-node figure
  // would have no rate.
  if (n.nvlink_gbps == 0 && n.gpus_per_pcie_switch != n.gpus) {
    m.get_map("pcie").fail("gpus_per_switch",
                           "a node without an nvlink section needs all its GPUs on one PCIe "
                           "switch (" +
                               std::to_string(n.gpus) + " = node.gpus), got " +
                               std::to_string(n.gpus_per_pcie_switch));
  }
  read_nics(m.get_map("nics"), n);
  const YamlMap host = m.get_map("host");
  host.check_known({"ram_gib", "mem_gbps", "cpu_cores", "sockets"});
  n.host_ram_gib = positive_number(host, "ram_gib");
  if (const std::string why = memory_gib_problem(n.host_ram_gib); !why.empty())
    host.fail("ram_gib", why);
  n.host_mem_gbps = positive_number(host, "mem_gbps");
  n.cpu_cores = count(host, "cpu_cores", kMaxCpuCores);
  n.cpu_sockets = count(host, "sockets", 8, n.cpu_sockets);
}

void read_overheads(const YamlMap& m, Overheads& o) {
  m.check_known({"cuda_context_gib", "allocator_slack_fraction", "host_per_process_gib"});
  o.cuda_context_gib = non_negative_number(m, "cuda_context_gib", o.cuda_context_gib);
  o.allocator_slack_fraction =
      non_negative_number(m, "allocator_slack_fraction", o.allocator_slack_fraction);
  if (o.allocator_slack_fraction >= 1) {
    m.fail("allocator_slack_fraction",
           "must be below 1, got " + as_written(m, "allocator_slack_fraction"));
  }
  o.host_per_process_gib = non_negative_number(m, "host_per_process_gib", o.host_per_process_gib);
}

void read_calibration(const YamlMap& m, Calibration& c) {
  m.check_known({"gemm_efficiency_max",
                 "gemm_k_overhead",
                 "gemm_tile_m",
                 "gemm_tile_n",
                 "kernel_launch_us",
                 "hbm_efficiency",
                 "link_efficiency",
                 "collective_us",
                 "pcie_efficiency",
                 "host_kernel_efficiency",
                 "training_gemm_efficiency",
                 "attention_fa2_efficiency",
                 "attention_fa3_efficiency",
                 "attention_sdpa_efficiency",
                 "host_sync_us",
                 "eager_op_us",
                 "python_iteration_ns",
                 "layer_overhead_us",
                 "weight_broadcast_gbps",
                 "ep_comm_overlap",
                 "cp_comm_overlap",
                 "step_time_calibrated_on"});
  c.gemm_tile_m = count(m, "gemm_tile_m", kMaxGemmTile, c.gemm_tile_m);
  c.gemm_tile_n = count(m, "gemm_tile_n", kMaxGemmTile, c.gemm_tile_n);
  for (auto [key, field] : {std::pair{"gemm_efficiency_max", &c.gemm_efficiency_max},
                            {"hbm_efficiency", &c.hbm_efficiency},
                            {"link_efficiency", &c.link_efficiency},
                            {"pcie_efficiency", &c.pcie_efficiency},
                            {"host_kernel_efficiency", &c.host_kernel_efficiency},
                            {"training_gemm_efficiency", &c.training_gemm_efficiency},
                            {"attention_fa2_efficiency", &c.attention_fa2_efficiency},
                            {"attention_fa3_efficiency", &c.attention_fa3_efficiency},
                            {"attention_sdpa_efficiency", &c.attention_sdpa_efficiency}})
    *field = efficiency(m, key, *field);
  for (auto [key, field] : {std::pair{"gemm_k_overhead", &c.gemm_k_overhead},
                            {"kernel_launch_us", &c.kernel_launch_us},
                            {"collective_us", &c.collective_us},
                            {"host_sync_us", &c.host_sync_us},
                            {"eager_op_us", &c.eager_op_us},
                            {"python_iteration_ns", &c.python_iteration_ns},
                            {"layer_overhead_us", &c.layer_overhead_us},
                            {"weight_broadcast_gbps", &c.weight_broadcast_gbps}})
    *field = non_negative_number(m, key, *field);
  c.step_time_calibrated_on = m.get_string("step_time_calibrated_on", c.step_time_calibrated_on);
  for (auto [key, field] : {std::pair{"ep_comm_overlap", &c.ep_comm_overlap},
                            std::pair{"cp_comm_overlap", &c.cp_comm_overlap}}) {
    *field = non_negative_number(m, key, *field);
    if (*field > 1) m.fail(key, "is a fraction: at most 1, got " + as_written(m, key));
  }
}

// The `pytorch:` runtime profile (topology_spec.h, PytorchRuntime); every key optional.
void read_pytorch_runtime(const YamlMap& m, PytorchRuntime& r) {
  m.check_known({"cuda_context_gib", "cublas_workspace_mib", "gemm_streams", "nccl_connection_mib",
                 "nccl_ring_channels", "nccl_p2p_channels_nvlink_peer",
                 "nccl_p2p_channels_net_peer", "nccl_net_chunk_kib", "nccl_nvls_mib_per_local_gpu",
                 "nccl_work_fifo_mib", "allocator_round_bytes", "expandable_segments",
                 "backward_temporaries_fraction", "ac_offload_inflight_layers", "host_per_rank_gib",
                 "optimizer_state_pinned", "host_pass_efficiency"});
  for (auto [key, field] : {std::pair{"cuda_context_gib", &r.cuda_context_gib},
                            {"cublas_workspace_mib", &r.cublas_workspace_mib},
                            {"nccl_connection_mib", &r.nccl_connection_mib},
                            {"nccl_net_chunk_kib", &r.nccl_net_chunk_kib},
                            {"nccl_nvls_mib_per_local_gpu", &r.nccl_nvls_mib_per_local_gpu},
                            {"nccl_work_fifo_mib", &r.nccl_work_fifo_mib},
                            {"allocator_round_bytes", &r.allocator_round_bytes},
                            {"host_per_rank_gib", &r.host_per_rank_gib},
                            {"backward_temporaries_fraction", &r.backward_temporaries_fraction}})
    *field = non_negative_number(m, key, *field);
  for (auto [key, field] : {std::pair{"gemm_streams", &r.gemm_streams},
                            {"nccl_ring_channels", &r.nccl_ring_channels},
                            {"nccl_p2p_channels_nvlink_peer", &r.nccl_p2p_channels_nvlink_peer},
                            {"nccl_p2p_channels_net_peer", &r.nccl_p2p_channels_net_peer},
                            {"ac_offload_inflight_layers", &r.ac_offload_inflight_layers}})
    *field = count(m, key, 64, *field);  // NCCL's MAXCHANNELS is 64
  r.host_pass_efficiency = efficiency(m, "host_pass_efficiency", r.host_pass_efficiency);
  r.optimizer_state_pinned = m.get_bool("optimizer_state_pinned", r.optimizer_state_pinned);
  r.expandable_segments = m.get_bool("expandable_segments", r.expandable_segments);
  if (r.allocator_round_bytes < 512 || std::fmod(r.allocator_round_bytes, 512) != 0)
    m.fail("allocator_round_bytes", "the caching allocator rounds to multiples of 512 B; got " +
                                        as_written(m, "allocator_round_bytes"));
}

// `fitted: [SECTION, ...]`: sections of the bundled data/calibration/fitted.yaml, each the
// constants one fit determined (its `calibration:` and `pytorch:` keys), read in order before the
// topology's own sections, whose keys override. The fitted values live in that one file, with
// their bounds and runs (docs/validation.md), rather than copied across topology files.
void read_fitted(const YamlMap& root, Topology& t) {
  std::vector<std::string> names;
  const YAML::Node list = root.raw("fitted");
  if (list.IsScalar()) {
    names.push_back(list.Scalar());
  } else if (list.IsSequence()) {
    for (const YAML::Node& n : list) {
      if (!n.IsScalar()) root.fail_at(n, "fitted", "expected a section name of fitted.yaml");
      names.push_back(n.Scalar());
    }
  } else {
    root.fail("fitted", "expected a section name of fitted.yaml, or a list of them");
  }
  std::string path;
  try {
    path = data_path("calibration/fitted.yaml");
  } catch (const std::exception& e) {
    root.fail("fitted", std::string("needs the bundled calibration/fitted.yaml: ") + e.what());
  }
  const YamlMap file(detail::parse_yaml_text(read_input_file(path), path), path, "");
  for (const std::string& name : names) {
    if (!file.has(name)) {
      std::string known;
      for (const auto& kv : file.node()) known += (known.empty() ? "" : ", ") + kv.first.Scalar();
      root.fail("fitted",
                "no section '" + brief(name) + "' in " + path + " (it has " + known + ")");
    }
    const YamlMap section = file.get_map(name);
    section.check_known({"calibration", "pytorch"});
    if (auto c = section.get_optional_map("calibration")) read_calibration(*c, t.calibration);
    if (auto r = section.get_optional_map("pytorch")) read_pytorch_runtime(*r, t.pytorch);
  }
}

}  // namespace

Topology parse_topology(const std::string& text, const std::string& path_for_errors) {
  const YamlMap root(detail::parse_yaml_text(text, path_for_errors), path_for_errors, "");
  root.check_known(
      {"name", "max_nodes", "node", "fabric", "overheads", "fitted", "calibration", "pytorch"});
  Topology t;
  t.name = root.get_string("name");
  if (const std::string why = name_problem(t.name); !why.empty()) root.fail("name", why);
  t.source_path = path_for_errors;
  t.max_nodes = count(root, "max_nodes", kMaxNodes);
  const YamlMap node = root.get_map("node");
  read_node(node, t.node);
  for (const auto& [key, what, per_node] :
       {std::tuple{"gpus", "GPUs", t.node.gpus}, {"nics", "NICs", t.node.nics}}) {
    const int64_t total = int64_t(t.max_nodes) * per_node;
    if (total > kMaxWorldRanks) {
      node.fail(key, std::to_string(t.max_nodes) + " nodes (max_nodes) of " +
                         std::to_string(per_node) + " " + what + " make " + std::to_string(total) +
                         ", more than muonplan plans for (" + std::to_string(kMaxWorldRanks) + ")");
    }
  }
  const YamlMap fabric = root.get_map("fabric");
  fabric.check_known({"latency_us"});
  t.fabric_latency_us = non_negative_number(fabric, "latency_us");
  if (auto o = root.get_optional_map("overheads")) read_overheads(*o, t.overheads);
  if (root.has("fitted")) read_fitted(root, t);
  if (auto c = root.get_optional_map("calibration")) read_calibration(*c, t.calibration);
  if (auto r = root.get_optional_map("pytorch")) read_pytorch_runtime(*r, t.pytorch);
  return t;
}

std::string resolve_topology_path(const std::string& name) {
  std::error_code ec;
  const bool plain = name.find('/') == std::string::npos && name.find(".yaml") == std::string::npos;
  if (!plain || std::filesystem::exists(name, ec)) return name;
  try {
    const std::string bundled = data_path("topologies/" + name + ".yaml");
    if (std::filesystem::exists(bundled, ec)) return bundled;
  } catch (const std::exception&) {  // no data directory: read the name as a path
  }
  return name;
}

Topology load_topology(const std::string& path_or_name) {
  const std::string path = resolve_topology_path(path_or_name);
  return parse_topology(read_input_file(path), path);
}

}  // namespace muonplan
