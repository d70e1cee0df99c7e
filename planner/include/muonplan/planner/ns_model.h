// Predicted time of one batched Newton-Schulz call on a topology's GPU (docs/planner.md, "NS
// time"). Each GEMM costs the larger of its compute time and its HBM time, plus a launch:
//   compute_s = flops / (peak * gemm_efficiency_max * fill * wave_eff * K / (K + gemm_k_overhead))
//   memory_s  = bytes / (hbm_gbps * hbm_efficiency)
// wave_eff is the fraction of the last wave of output tiles that is busy (tiles over SMs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "muonplan/planfile/ns_schedule.h"
#include "muonplan/planner/topology.h"

namespace muonplan {

struct GemmCost {
  std::string what;  // "X X^T", "b A + c A A", "a X + B X"
  int64_t batch = 0, m = 0, n = 0, k = 0;
  double flops = 0;
  double bytes = 0;
  double wave_efficiency = 0;
  double k_efficiency = 0;
  double fill_efficiency = 0;  // the tiles' useful share (gemm_shape_efficiency)
  double compute_s = 0;
  double memory_s = 0;
  double launch_s = 0;
  double total_s = 0;
};

struct NsCost {
  int64_t batch = 0, rows = 0, cols = 0;
  int64_t m = 0, n = 0;  // m = min(rows, cols), n = max
  int iterations = 0;
  double flops = 0;        // 4 m^2 n + 2 m^3 per iteration and matrix (or symmetric 3 m^2 n + m^3)
  double normalize_s = 0;  // Frobenius norm and bf16 scale: one read, one write of the batch
  double gemm_s = 0;
  double total_s = 0;
  std::vector<GemmCost> gemms;  // one iteration's three GEMMs
};

// FLOPs of NS on one [rows, cols] matrix.
double ns_flops(int64_t rows, int64_t cols, int iterations, bool symmetric = false);

// The shape's share of a GEMM kernel's large-shape rate, the one rule the NS model and the
// training step's roofline share (docs/planner.md section 3). The kernel covers the output with
// tiles of tile_m x tile_n, each tile's K loop cut into split_k slices, each slice on one SM at
// its share of the rate, in waves of sm_count slices:
//   fill = batch m n / (tiles x tile_m x tile_n)   (tile quantization: the last row and column
//          of tiles compute padding), tiles = batch x ceil(m / tile_m) x ceil(n / tile_n);
//   wave = tiles split_k / (waves x sm_count), waves = ceil(tiles split_k / sm_count)   (wave
//          quantization: the last wave leaves SMs idle);
//   k    = S / (S + gemm_k_overhead), S = K / split_k   (each slice's prologue and epilogue).
// So a GEMM takes waves x 2 tile_m tile_n (S + gemm_k_overhead) / (rate / sm_count), and
// flops / (rate x wave x k x fill) is that. A split adds its fp32 partials' traffic
// (split_bytes: written and read, 8 B per output element and slice). Doubles: a grouped GEMM's
// tokens per expert need not be whole.
struct GemmShapeEfficiency {
  double wave = 1, k = 1, fill = 1;
  int tile_m = 0, tile_n = 0, split_k = 1;
  double tiles = 0, waves = 0;
  double split_bytes = 0;
  double factor() const { return wave * k * fill; }
};
// Which kernel runs it. `library`: cuBLAS, whose heuristic picks among its kernels and K splits
// (cublasLt's CUBLASLT_ALGO_CONFIG_SPLITK_NUM); taken as the fastest of the topology's tile
// (gemm_tile_m x gemm_tile_n), half as wide, and half as tall and wide (on SM90 128 x 256,
// 128 x 128, 64 x 128: the tiles of PyTorch's own SM90 CUTLASS kernels), K split into up to 16
// slices of at least 256. `grouped`: torch._grouped_mm (aten/src/ATen/native/cuda/GroupMM.cu),
// one launch over the batch, no split: on SM90 a 64 x 128 tile when a group's M or N is at most
// 128, else 128 x 256; on SM100 64 x 128; elsewhere as `library`.
enum class GemmKernel { library, grouped };
GemmShapeEfficiency gemm_shape_efficiency(const Topology& topo, double batch, double m, double n,
                                          double k, GemmKernel kernel = GemmKernel::library);

GemmCost gemm_cost(const Topology& topo, const std::string& what, int64_t batch, int64_t m,
                   int64_t n, int64_t k, bool accumulate);

NsCost ns_cost(const Topology& topo, int64_t batch, int64_t rows, int64_t cols,
               const NsSchedule& schedule, bool symmetric = false);

}  // namespace muonplan
