// A topology's figures (docs/topology.md): the node, its links and the time model's constants.
// Bandwidths are GB/s (1e9 bytes per second) per direction; latencies are microseconds. Plain
// data that a Plan carries; reading topology files and the device graph are the planner's
// (topology.h).
#pragma once

#include <string>

namespace muonplan {

struct GpuSpec {
  std::string name;
  double memory_gib = 0;   // as the device reports it (total, before the CUDA context)
  double bf16_tflops = 0;  // dense bf16 tensor-core peak, TFLOP/s
  double hbm_gbps = 0;     // HBM bandwidth
  int sm_count = 0;        // streaming multiprocessors: the GEMM wave-quantization model uses it
  // CUDA compute capability (8.0 A100, 8.6 RTX A6000, 9.0 H100/H200, 10.0 B200): picks the
  // attention kernel's throughput and `--attention auto`'s kernel; 0: not given.
  double compute_capability = 0;
  bool operator==(const GpuSpec&) const = default;
};

struct NodeSpec {
  int gpus = 0;
  // What a "GPU" of this node is: a CUDA device, or an MPI rank of the CPU backend (cpu-ci).
  // Only the words the tool prints change ("4 ranks per node"); every figure is the same.
  bool cpu_ranks = false;
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
  int cpu_sockets = 1;       // NUMA sockets sharing host_mem_gbps; each rank on its GPU's
  bool operator==(const NodeSpec&) const = default;
};

// Fixed costs the cost model adds on top of what the tensors need.
struct Overheads {
  double cuda_context_gib = 0;          // per GPU, outside the allocator's view
  double allocator_slack_fraction = 0;  // fragmentation reserve on top of allocated GPU bytes
  double host_per_process_gib = 0;      // per rank: runtime, libraries, CUDA host allocations
  bool operator==(const Overheads&) const = default;
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
  double pcie_efficiency = 1.0;         // pcie_* figures are already measured rates
  double host_kernel_efficiency = 0.8;  // CPU optimizer kernels' fraction of host_mem_gbps
  // The training step's roofline (docs/planner.md section 8). Fitted per GPU kind (`muonplan
  // calibrate --training-run`), each bounded: the training GEMMs' large-shape fraction of bf16
  // peak (in place of gemm_efficiency_max, which is the NS kernels'), and per attention kernel
  // the fraction of its published throughput (attention_rate) the trainer reaches.
  double training_gemm_efficiency = 0.75;
  double attention_fa2_efficiency = 1, attention_fa3_efficiency = 1, attention_sdpa_efficiency = 1;
  // The trainer's host work (not fitted; docs/planner.md section 8, "The trainer's host work"):
  // one device sync from the host (a scalar's device-to-host copy and its stream synchronize;
  // published per GPU kind, cited in the topology), one eager aten op's dispatch without
  // autograd, and one iteration of a Python loop (bench/host_token_loop.py).
  double host_sync_us = 6;
  double eager_op_us = 6.3;
  double python_iteration_ns = 20;
  // A fixed cost per decoder layer per pass beyond the modelled launches and collective
  // latencies (us; not fitted: the runs show no per-layer constant, docs/validation.md).
  double layer_overhead_us = 0;
  // What runs between two training steps (docs/planner.md section 8, "Between steps"): the
  // end-to-end rate of prime-rl's filesystem weight broadcast, GB (1e9) of saved state per
  // second (gather to rank 0, the blocking copies to the host, safetensors serialization and the
  // file write: a property of the host and its storage). 0: not known, the plan lists no
  // broadcast time.
  double weight_broadcast_gbps = 0;
  // The measured runs the step's fitted constants come from (the topology says which); "": none
  // on this GPU kind, so plans say their step time is uncalibrated.
  std::string step_time_calibrated_on;
  // Fractions of the expert-parallel dispatch/combine and of the Ulysses context-parallel
  // all-to-alls that run under compute (0: the trainer waits for each, as synchronous
  // all-to-alls do; ring attention hides its hops behind attention compute by design).
  double ep_comm_overlap = 0;
  double cp_comm_overlap = 0;
  bool operator==(const Calibration&) const = default;
};

// The `pytorch` runtime profile (docs/planner.md, "Runtime"): what a PyTorch FSDP2 trainer on
// NCCL takes around the tensors it allocates. Defaults are the libraries' own defaults or public
// measurements (docs/topology.md names each source); the ones marked calibratable were not found
// in public and `muonplan calibrate --training-run` may refit them.
struct PytorchRuntime {
  // CUDA context per GPU with lazy module loading, outside the allocator (287 MB measured,
  // pytorch#86509; H100/H200 figure not found: calibratable).
  double cuda_context_gib = 0.27;
  // cuBLAS workspace per stream that runs GEMMs: 32 MiB on compute capability 9.x.
  double cublas_workspace_mib = 32;
  int gemm_streams = 1;
  // NCCL device buffers per (channel, peer) connection: LL 512 KiB + LL128 4.6875 MiB + SIMPLE
  // NCCL_BUFFSIZE 4 MiB, which on Hopper the receiver rounds to 10 MiB and the sender's header
  // to 2 MiB (nccl#1685): 12 MiB.
  double nccl_connection_mib = 12;
  int nccl_ring_channels = 32;              // collective channels of an NVLink communicator
  int nccl_p2p_channels_nvlink_peer = 32;   // all-to-all channels per NVLink peer (8 x H100)
  int nccl_p2p_channels_net_peer = 2;       // NCCL_NCHANNELS_PER_NET_PEER in effect
  double nccl_net_chunk_kib = 128;          // NCCL_P2P_NET_CHUNKSIZE: network p2p pool is 16 chunks
  double nccl_nvls_mib_per_local_gpu = 32;  // NVLS: 16 channels x 2 x 1 MiB, per local GPU
  double nccl_work_fifo_mib = 1;            // pinned host work FIFO per communicator
  // Caching allocator (simulated: planner/src/cost/caching_allocator.h): requests round up to
  // 512 B (the source's kMinBlockSize); PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.
  double allocator_round_bytes = 512;
  bool expandable_segments = false;
  // Temporaries a layer's backward allocates beside its saved tensors and their gradients
  // (operator workspaces, the expert all-to-all's receive buffers, autograd's intermediates),
  // which the timeline does not list one by one: this fraction of the layer's recomputed
  // activations, allocated at its backward's start and freed at its end (docs/planner.md
  // section 5c). Not found in public: 0 by default, calibratable within [0, 2].
  double backward_temporaries_fraction = 0;
  // AC offload: layer inputs kept on the GPU while they stream to the host (prime-rl default).
  int ac_offload_inflight_layers = 5;
  // Host: resident memory of one rank after CUDA and NCCL init, libraries included (2.0 GiB
  // measured with CUDA initialised, pytorch#113326; calibratable).
  double host_per_rank_gib = 2.0;
  // Host passes of the trainer's CPU optimizer work (PyTorch CPU ops, one pass each) at this
  // fraction of the rank's host memory bandwidth; muonplan's executor uses the calibration's
  // host_kernel_efficiency instead (calibratable).
  double host_pass_efficiency = 0.8;
  // Optimizer offload: the trainer keeps each state tensor pinned (rounded to a power of two).
  bool optimizer_state_pinned = true;
  bool operator==(const PytorchRuntime&) const = default;
};

struct Topology {
  std::string name;
  std::string source_path;
  int max_nodes = 1;  // nodes available; --nodes auto searches 1..max_nodes
  NodeSpec node;
  double fabric_latency_us = 0;
  Overheads overheads;
  Calibration calibration;
  PytorchRuntime pytorch;
};

}  // namespace muonplan
