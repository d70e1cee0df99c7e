#include "muonplan/planner/ns_model.h"
#include "muonplan/base/units.h"

#include <algorithm>
#include <cmath>

namespace muonplan {
namespace {
constexpr double kBf16Bytes = 2;
}

namespace {
// One tile shape and K split: its tiles, waves and shares of the rate (gemm_shape_efficiency).
GemmShapeEfficiency on_tile(const Topology& topo, double batch, double m, double n, double k,
                            int tile_m, int tile_n, int split) {
  GemmShapeEfficiency e;
  e.tile_m = std::max(1, tile_m);
  e.tile_n = std::max(1, tile_n);
  e.split_k = std::max(1, split);
  e.tiles = batch * std::ceil(m / e.tile_m) * std::ceil(n / e.tile_n);
  const int sms = std::max(1, topo.node.gpu.sm_count);
  const double units = e.tiles * e.split_k;  // each tile's K loop in split_k slices
  e.waves = std::ceil(units / sms);
  e.wave = units / (e.waves * sms);
  e.fill = batch * m * n / (e.tiles * e.tile_m * e.tile_n);
  const double slice = k / e.split_k;
  e.k = slice / (slice + topo.calibration.gemm_k_overhead);
  // Split K: each slice's fp32 partial output written and read back by the reduction.
  e.split_bytes = e.split_k > 1 ? batch * m * n * 4 * 2 * e.split_k : 0;
  return e;
}
// The time of a tile choice at any rate, up to a constant: waves x tile area x slice cost.
double tile_cost(const GemmShapeEfficiency& e, double k, double k_overhead) {
  return e.waves * e.tile_m * e.tile_n * (k / e.split_k + k_overhead);
}
// cuBLAS's split-K: at most this many slices, each at least kMinSplitK of K.
constexpr int kMaxSplitK = 16;
constexpr double kMinSplitK = 256;
}  // namespace

GemmShapeEfficiency gemm_shape_efficiency(const Topology& topo, double batch, double m, double n,
                                          double k, GemmKernel kernel) {
  const Calibration& cal = topo.calibration;
  const double cc = topo.node.gpu.compute_capability;
  if (kernel == GemmKernel::grouped && cc >= 9 && cc < 11) {
    const bool small = cc >= 10 || m <= 128 || n <= 128;  // every group the same shape here
    return small ? on_tile(topo, batch, m, n, k, 64, 128, 1)
                 : on_tile(topo, batch, m, n, k, 128, 256, 1);
  }
  // cuBLAS: the fastest of its tiles and K splits, the larger tile and fewer splits on a tie.
  const int tm = cal.gemm_tile_m, tn = cal.gemm_tile_n;
  const int candidates[][2] = {{tm, tn}, {tm, tn / 2}, {tm / 2, tn / 2}};
  GemmShapeEfficiency best;
  double best_cost = 0;
  for (const auto& t : candidates) {
    if (t[0] < 1 || t[1] < 1) continue;
    for (int split = 1; split <= kMaxSplitK && (split == 1 || k / split >= kMinSplitK); ++split) {
      const GemmShapeEfficiency e = on_tile(topo, batch, m, n, k, t[0], t[1], split);
      const double cost = tile_cost(e, k, cal.gemm_k_overhead);
      if (best.tile_m == 0 || cost < best_cost) best = e, best_cost = cost;
    }
  }
  return best;
}

double ns_flops(int64_t rows, int64_t cols, int iterations, bool symmetric) {
  const double m = static_cast<double>(std::min(rows, cols));
  const double n = static_cast<double>(std::max(rows, cols));
  const double per_iter = symmetric ? 3 * m * m * n + m * m * m : 4 * m * m * n + 2 * m * m * m;
  return per_iter * iterations;
}

GemmCost gemm_cost(const Topology& topo, const std::string& what, int64_t batch, int64_t m,
                   int64_t n, int64_t k, bool accumulate) {
  const GpuSpec& gpu = topo.node.gpu;
  const Calibration& cal = topo.calibration;
  GemmCost g;
  g.what = what;
  g.batch = batch;
  g.m = m;
  g.n = n;
  g.k = k;
  g.flops = 2.0 * batch * m * n * k;
  // Reads A [m,k] and B [k,n]; writes C [m,n], and reads it first when the add is folded in.
  const GemmShapeEfficiency e =
      gemm_shape_efficiency(topo, double(batch), double(m), double(n), double(k));
  g.bytes =
      kBf16Bytes * batch * (double(m) * k + double(k) * n + double(m) * n * (accumulate ? 2 : 1)) +
      e.split_bytes;
  g.wave_efficiency = e.wave;
  g.k_efficiency = e.k;
  g.fill_efficiency = e.fill;
  const double rate = gpu.bf16_tflops * 1e12 * cal.gemm_efficiency_max * e.factor();
  g.compute_s = g.flops / rate;
  g.memory_s = g.bytes / (gpu.hbm_gbps * kGB * cal.hbm_efficiency);
  g.launch_s = cal.kernel_launch_us * 1e-6;
  g.total_s = std::max(g.compute_s, g.memory_s) + g.launch_s;
  return g;
}

NsCost ns_cost(const Topology& topo, int64_t batch, int64_t rows, int64_t cols,
               const NsSchedule& schedule, bool symmetric) {
  NsCost c;
  c.batch = batch;
  c.rows = rows;
  c.cols = cols;
  c.m = std::min(rows, cols);
  c.n = std::max(rows, cols);
  c.iterations = static_cast<int>(schedule.steps.size());
  c.flops = batch * ns_flops(rows, cols, c.iterations, symmetric);
  if (batch == 0) return c;
  const Calibration& cal = topo.calibration;
  // Norm: read the fp32 input, write bf16 X (two kernels: reduce, scale).
  c.normalize_s = batch * double(c.m) * c.n * (4 + kBf16Bytes) /
                      (topo.node.gpu.hbm_gbps * kGB * cal.hbm_efficiency) +
                  2 * cal.kernel_launch_us * 1e-6;
  // A symmetric product computes one triangle: half the tiles of the m x m outputs.
  const int64_t half = symmetric ? 2 : 1;
  c.gemms.push_back(gemm_cost(topo, "A = X X^T", batch, c.m, c.m / half, c.n, false));
  c.gemms.push_back(gemm_cost(topo, "B = b A + c A A", batch, c.m, c.m / half, c.m, true));
  c.gemms.push_back(gemm_cost(topo, "X = a X + B X", batch, c.m, c.n, c.m, true));
  double per_iter = 0;
  for (const GemmCost& g : c.gemms) per_iter += g.total_s;
  c.gemm_s = per_iter * c.iterations;
  c.total_s = c.normalize_s + c.gemm_s;
  return c;
}

}  // namespace muonplan
