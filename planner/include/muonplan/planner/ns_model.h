// Predicted time of one batched Newton-Schulz call on a topology's GPU (docs/planner.md, "NS
// time"). Each GEMM costs the larger of its compute time and its HBM time, plus a launch:
//   compute_s = flops / (peak * gemm_efficiency_max * wave_eff * K / (K + gemm_k_overhead))
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
// training step's roofline share: wave = tiles / (ceil(tiles / sm_count) x sm_count) with tiles
// = batch x ceil(m / tile_m) x ceil(n / tile_n) (the last wave of output tiles leaves SMs idle:
// small m or n, few tiles), k = K / (K + gemm_k_overhead) (each tile's prologue and epilogue:
// short K). Doubles: a grouped GEMM's tokens per expert need not be whole.
struct GemmShapeEfficiency {
  double wave = 1, k = 1;
};
GemmShapeEfficiency gemm_shape_efficiency(const Topology& topo, double batch, double m, double n,
                                          double k);

GemmCost gemm_cost(const Topology& topo, const std::string& what, int64_t batch, int64_t m,
                   int64_t n, int64_t k, bool accumulate);

NsCost ns_cost(const Topology& topo, int64_t batch, int64_t rows, int64_t cols,
               const NsSchedule& schedule, bool symmetric = false);

}  // namespace muonplan
