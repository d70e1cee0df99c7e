// The Newton-Schulz cost model: FLOPs per iteration and the time of a schedule.
#include <catch2/catch.hpp>

#include "muonplan/planner/ns_model.h"
#include "test_plans.h"

using namespace muonplan;
using test::h200;

TEST_CASE("NS FLOPs: 4 m^2 n + 2 m^3 per iteration, m the smaller side", "[ns_model]") {
  // By hand for a 768 x 2048 matrix: X X^T is 2 x 768^2 x 2048 = 2,415,919,104 FLOPs, B = bA +
  // cA^2 2 x 768^3 = 905,969,664, B X 2,415,919,104: 5,737,807,872 an iteration.
  CHECK(ns_flops(768, 2048, 5) == 5 * 5'737'807'872.0);
  CHECK(ns_flops(2048, 768, 5) == 5 * 5'737'807'872.0);  // the smaller side is m
  // The symmetric variant computes one triangle of X X^T and A^2: 1,207,959,552 + 452,984,832
  // + 2,415,919,104.
  CHECK(ns_flops(768, 2048, 1, true) == 4'076'863'488.0);
  const NsCost c = ns_cost(h200(), 16, 1408, 4096, ns_schedule("quintic"));
  // By hand: 4 x 1408^2 x 4096 + 2 x 1408^3 = 32,480,690,176 + 5,582,618,624 an iteration, 5
  // iterations, 16 matrices.
  CHECK(c.flops == 16.0 * 5 * 38'063'308'800.0);
  CHECK(c.total_s == Approx(c.normalize_s + c.gemm_s));
  // deepseek-v4 runs 10 iterations: about twice a 5-step schedule.
  const NsCost v4 = ns_cost(h200(), 16, 1408, 4096, ns_schedule("deepseek-v4"));
  CHECK(v4.total_s / c.total_s == Approx(2.0).epsilon(0.05));
}

// gemm_shape_efficiency on shapes worked by hand (h200-ib: 132 SMs, gemm_tile 128 x 256,
// gemm_k_overhead 384, compute capability 9.0). The time of a choice is waves x tile area x
// (K / split + 384); cuBLAS's is the cheapest of 128 x 256, 128 x 128 and 64 x 128 with K split
// 1-16 ways (slices >= 256), the larger tile and fewer splits on a tie.
TEST_CASE("GEMM shape: tile and wave quantization, K split, grouped tiles", "[ns_model]") {
  const Topology t = h200();
  SECTION("large and square: 128 x 256, 512 tiles in 4 waves, no split") {
    // All three tiles cost 131072 x 4480 (4 x 32768, 8 x 16384, 16 x 8192): the first stays;
    // split in 2 it would be 8 waves x 32768 x 2432, dearer.
    const GemmShapeEfficiency e = gemm_shape_efficiency(t, 1, 4096, 4096, 4096);
    CHECK(e.tile_m == 128);
    CHECK(e.tile_n == 256);
    CHECK(e.split_k == 1);
    CHECK(e.tiles == 512);
    CHECK(e.waves == 4);
    CHECK(e.wave == Approx(512.0 / 528));
    CHECK(e.fill == 1);
    CHECK(e.k == Approx(4096.0 / 4480));
    CHECK(e.split_bytes == 0);
  }
  SECTION("skinny (a LoRA A forward, r 16): 64 x 128 tiles, 7/8 of each padding") {
    // 128 x 256: at best split 2, 1 wave x 32768 x 896 = 29.4M; 128 x 128 split 2: 14.7M;
    // 64 x 128: 128 tiles, 1 wave x 8192 x 1408 = 11.5M.
    const GemmShapeEfficiency e = gemm_shape_efficiency(t, 1, 8192, 16, 1024);
    CHECK(e.tile_m == 64);
    CHECK(e.tile_n == 128);
    CHECK(e.split_k == 1);
    CHECK(e.tiles == 128);
    CHECK(e.waves == 1);
    CHECK(e.wave == Approx(128.0 / 132));
    CHECK(e.fill == Approx(8192.0 * 16 / (128 * 64 * 128)));  // 0.125
    CHECK(e.k == Approx(1024.0 / 1408));
  }
  SECTION("few tiles, long K (a LoRA A weight grad): K split 16 ways") {
    // 64 x 128: 8 tiles; split s, 8 s slices in 1 wave: 8192 x (16384 / s + 384), least at 16.
    const GemmShapeEfficiency e = gemm_shape_efficiency(t, 1, 16, 1024, 16384);
    CHECK(e.tile_m == 64);
    CHECK(e.tile_n == 128);
    CHECK(e.split_k == 16);
    CHECK(e.tiles == 8);
    CHECK(e.waves == 1);
    CHECK(e.wave == Approx(128.0 / 132));
    CHECK(e.fill == Approx(0.25));
    CHECK(e.k == Approx(1024.0 / 1408));
    CHECK(e.split_bytes == 16.0 * 1024 * 8 * 16);  // fp32 partials written and read, per slice
  }
  SECTION("grouped: torch._grouped_mm's tiles, no split") {
    // 128 experts of [1024, 2048] x [2048, 1536]: 128 x 256, 48 tiles each, 6144 in 47 waves.
    const GemmShapeEfficiency big =
        gemm_shape_efficiency(t, 128, 1024, 1536, 2048, GemmKernel::grouped);
    CHECK(big.tile_m == 128);
    CHECK(big.tile_n == 256);
    CHECK(big.split_k == 1);
    CHECK(big.tiles == 6144);
    CHECK(big.waves == 47);
    CHECK(big.wave == Approx(6144.0 / 6204));
    CHECK(big.k == Approx(2048.0 / 2432));
    // N = 16 (a rank-16 adapter): the small kernel, 64 x 128: 16 tiles per expert, 2048 in
    // 16 waves, each tile 1/8 full.
    const GemmShapeEfficiency small =
        gemm_shape_efficiency(t, 128, 1024, 16, 2048, GemmKernel::grouped);
    CHECK(small.tile_m == 64);
    CHECK(small.tile_n == 128);
    CHECK(small.tiles == 2048);
    CHECK(small.waves == 16);
    CHECK(small.wave == Approx(2048.0 / 2112));
    CHECK(small.fill == Approx(0.125));
    // Off SM90 and SM100 torch._grouped_mm is not the kernel: as cuBLAS (RTX A6000, SM86).
    const Topology a6000 = test::topology("rtx-a6000");
    const GemmShapeEfficiency lib = gemm_shape_efficiency(a6000, 128, 1024, 16, 2048);
    const GemmShapeEfficiency grp =
        gemm_shape_efficiency(a6000, 128, 1024, 16, 2048, GemmKernel::grouped);
    CHECK(grp.tile_m == lib.tile_m);
    CHECK(grp.tile_n == lib.tile_n);
    CHECK(grp.split_k == lib.split_k);
    CHECK(grp.factor() == lib.factor());
  }
  SECTION("the time: waves x tile area x (slice + overhead) at one SM's rate, or the HBM floor") {
    const GemmCost c = gemm_cost(t, "x", 1, 8192, 16, 1024, false);
    const double sm_rate = 989.4e12 * t.calibration.gemm_efficiency_max / 132;
    CHECK(c.compute_s == Approx(1 * 2.0 * 64 * 128 * (1024 + 384) / sm_rate));
    // HBM at 100 GB/s: a 1024^3 GEMM is bound by its 6 MiB of bf16 A, B and C.
    Topology slow = t;
    slow.node.gpu.hbm_gbps = 100;
    const GemmCost m = gemm_cost(slow, "x", 1, 1024, 1024, 1024, false);
    CHECK(m.bytes == 2.0 * 3 * 1024 * 1024);
    CHECK(m.memory_s == Approx(m.bytes / (100e9 * slow.calibration.hbm_efficiency)));
    CHECK(m.memory_s > m.compute_s);
    CHECK(m.total_s == Approx(m.memory_s + t.calibration.kernel_launch_us * 1e-6));
  }
}
