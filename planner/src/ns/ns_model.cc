#include "muonplan/planner/ns_model.h"
#include "muonplan/base/units.h"

#include <algorithm>
#include <cmath>

namespace muonplan {
namespace {
constexpr double kBf16Bytes = 2;
}

GemmShapeEfficiency gemm_shape_efficiency(const Topology& topo, double batch, double m, double n,
                                          double k) {
  const Calibration& cal = topo.calibration;
  const double tiles = batch * std::ceil(m / cal.gemm_tile_m) * std::ceil(n / cal.gemm_tile_n);
  const int sms = std::max(1, topo.node.gpu.sm_count);
  const double waves = std::ceil(tiles / sms);
  return {tiles / (waves * sms), k / (k + cal.gemm_k_overhead)};
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
  g.bytes =
      kBf16Bytes * batch * (double(m) * k + double(k) * n + double(m) * n * (accumulate ? 2 : 1));
  const GemmShapeEfficiency e =
      gemm_shape_efficiency(topo, double(batch), double(m), double(n), double(k));
  g.wave_efficiency = e.wave;
  g.k_efficiency = e.k;
  const double rate =
      gpu.bf16_tflops * 1e12 * cal.gemm_efficiency_max * g.wave_efficiency * g.k_efficiency;
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
