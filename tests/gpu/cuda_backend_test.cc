// The CUDA backend against the CPU reference on identical inputs, primitive by primitive:
// elementwise kernels give the same bits; GEMMs are exact where every partial sum is (small
// integers) and within bf16 rounding otherwise; syrk_bf16 equals the GEMM and is exactly
// symmetric; memory, pinned host memory and lanes behave as cuda_backend.h says.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>

#include "gpu_test_util.h"

using namespace muonplan::exec;
using namespace muonplan::exec::test;

namespace {

// Runs `op(backend, inputs...)` on both backends: every input is copied to each backend, the
// op runs, and the listed outputs come back.
template <typename T>
std::vector<T> run_on(Backend& b, const std::vector<T>& init, auto&& op) {
  Buffer<T> buf(b, init);
  op(b, buf.data());
  return buf.host();
}

void fill_small_integers(std::vector<bf16>& v, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-8, 8);
  for (bf16& x : v) x = to_bf16(static_cast<float>(d(rng)));
}

// Floats that exercise the bf16 rounding: ties, values next to ties, subnormals, huge values
// that round to infinity, infinities and NaNs with payloads in the low bits.
std::vector<float> tricky_floats(int64_t n, uint32_t seed) {
  std::vector<float> v = random_f32(n, seed, 3.0f);
  const uint32_t special[] = {0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x00000001u, 0x80000001u,
                              0x007fffffu, 0x7f7fffffu, 0x7f7f8000u, 0xff7fffffu, 0x7f800000u,
                              0xff800000u, 0x7fc00000u, 0x7f800001u, 0xffa00001u, 0x00008000u};
  std::mt19937 rng(seed);
  for (size_t i = 0; i < v.size(); i += 7) {
    v[i] = bits_float(special[rng() % (sizeof special / sizeof special[0])]);
  }
  for (size_t i = 3; i < v.size(); i += 11) v[i] = bits_float(rng());  // any pattern
  return v;
}

struct GemmCase {
  int64_t batch, m, n, k;
  bool ta, tb;
  int64_t pad;  // extra elements per row (ld = cols + pad) and per matrix
};

struct GemmOut {
  std::vector<bf16> cpu, cuda;
};

GemmOut run_gemm(Pair& p, const GemmCase& g, float alpha, float beta, bool integers) {
  const int64_t ar = g.ta ? g.k : g.m, ac = g.ta ? g.m : g.k;
  const int64_t br = g.tb ? g.n : g.k, bc = g.tb ? g.k : g.n;
  auto layout = [&](int64_t rows, int64_t cols) {
    return std::pair<int64_t, int64_t>{cols + g.pad, rows * (cols + g.pad) + g.pad};
  };
  const auto [lda, sa] = layout(ar, ac);
  const auto [ldb, sb] = layout(br, bc);
  const auto [ldc, sc] = layout(g.m, g.n);
  std::vector<bf16> a(g.batch * sa), b(g.batch * sb), c(g.batch * sc);
  if (integers) {
    fill_small_integers(a, 1);
    fill_small_integers(b, 2);
    fill_small_integers(c, 3);
  } else {
    a = random_bf16(a.size(), 1);
    b = random_bf16(b.size(), 2);
    c = random_bf16(c.size(), 3);
  }
  GemmOut out;
  for (Backend* be : {p.cpu.get(), static_cast<Backend*>(p.cuda.get())}) {
    Buffer<bf16> da(*be, a), db(*be, b), dc(*be, c);
    be->gemm_bf16(g.batch, g.ta, g.tb, g.m, g.n, g.k, alpha,
                  MatrixBatch{da.data(), ar, ac, lda, sa}, MatrixBatch{db.data(), br, bc, ldb, sb},
                  beta, MatrixBatch{dc.data(), g.m, g.n, ldc, sc});
    (be == p.cpu.get() ? out.cpu : out.cuda) = dc.host();
  }
  return out;
}

const GemmCase kGemmCases[] = {
    {3, 5, 7, 9, false, false, 0},       {2, 17, 33, 65, false, true, 3},
    {2, 33, 17, 40, true, false, 5},     {1, 70, 90, 64, true, true, 8},
    {2, 130, 20, 31, false, false, 2},   {4, 256, 256, 512, false, true, 0},
    {1, 300, 500, 700, false, false, 0}, {2, 768, 768, 2048, false, true, 0},
};

}  // namespace

TEST_CASE("cuda: alloc zero-fills and counts current and peak bytes; pinned host memory",
          "[backend]") {
  Pair p;
  Backend& b = *p.cuda;
  CHECK(b.name() == "cuda");
  const MemoryStats before = b.memory();
  void* x = b.alloc(1000);
  void* y = b.alloc(3000);
  CHECK(b.memory().current_bytes == before.current_bytes + 4000);
  b.free(x);
  CHECK(b.memory().current_bytes == before.current_bytes + 3000);
  CHECK(b.memory().peak_bytes >= before.current_bytes + 4000);
  b.reset_peak();
  CHECK(b.memory().peak_bytes == b.memory().current_bytes);
  std::vector<unsigned char> host(3000, 0xab);
  b.copy_to_host(host.data(), y, host.size());
  CHECK(std::all_of(host.begin(), host.end(), [](unsigned char c) { return c == 0; }));
  b.free(y);
  CHECK_THROWS_AS(b.free(reinterpret_cast<void*>(0x1000)), std::invalid_argument);

  // Pinned host memory: counted, zeroed, and an asynchronous copy source and destination.
  const size_t n = 1 << 20;
  auto* h = static_cast<float*>(b.alloc_host(n * sizeof(float)));
  CHECK(b.host_memory().current_bytes == n * sizeof(float));
  CHECK(h[0] == 0.0f);
  CHECK(h[n - 1] == 0.0f);
  for (size_t i = 0; i < n; ++i) h[i] = float(i);
  void* d = b.alloc(n * sizeof(float));
  b.copy_to_device(d, h, n * sizeof(float));
  b.synchronize();  // pinned: the source must stay until here
  for (size_t i = 0; i < n; ++i) h[i] = -1.0f;
  b.copy_to_host(h, d, n * sizeof(float));
  b.synchronize();
  int64_t wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += h[i] != float(i);
  CHECK(wrong == 0);
  b.free(d);
  b.free_host(h);
  CHECK(b.host_memory().current_bytes == 0);

  // Device-to-device copy, overlapping ranges included (memmove semantics).
  std::vector<int32_t> v(1000);
  for (int i = 0; i < 1000; ++i) v[i] = i;
  Buffer<int32_t> dv(b, v);
  b.copy(dv.data() + 10, dv.data(), 500 * sizeof(int32_t));
  const std::vector<int32_t> moved = dv.host();
  for (int i = 0; i < 500; ++i) REQUIRE(moved[10 + i] == i);
}

TEST_CASE("cuda: casts give the CPU backend's bits, specials included", "[backend]") {
  Pair p;
  const int64_t n = 200003;
  const std::vector<float> x = tricky_floats(n, 7);
  std::vector<bf16> to_cpu(n), to_cuda(n);
  for (Backend* b : {p.cpu.get(), static_cast<Backend*>(p.cuda.get())}) {
    Buffer<float> dx(*b, x);
    Buffer<bf16> dy(*b, n);
    b->cast_to_bf16(n, dx.data(), dy.data());
    (b == p.cpu.get() ? to_cpu : to_cuda) = dy.host();
  }
  INFO("first difference at " << first_difference(to_cpu, to_cuda));
  CHECK(same_bits(to_cpu, to_cuda));
  // And back: exact widening.
  std::vector<float> back_cpu(n), back_cuda(n);
  for (Backend* b : {p.cpu.get(), static_cast<Backend*>(p.cuda.get())}) {
    Buffer<bf16> dx(*b, to_cpu);
    Buffer<float> dy(*b, n);
    b->cast_to_f32(n, dx.data(), dy.data());
    (b == p.cpu.get() ? back_cpu : back_cuda) = dy.host();
  }
  CHECK(same_bits(back_cpu, back_cuda));
}

TEST_CASE("cuda: momentum, apply_update and adamw give the CPU backend's bits", "[backend]") {
  Pair p;
  const int64_t n = 100003;
  const std::vector<float> g = random_f32(n, 21), m0 = random_f32(n, 22), w0 = random_f32(n, 23);
  std::vector<bf16> mb0(n);
  for (int64_t i = 0; i < n; ++i) mb0[i] = to_bf16(m0[i]);
  for (bool nesterov : {false, true}) {
    INFO("nesterov " << nesterov);
    std::vector<float> m[2];
    std::vector<bf16> u[2], mb[2], ub[2];
    int k = 0;
    for (Backend* b : {p.cpu.get(), static_cast<Backend*>(p.cuda.get())}) {
      Buffer<float> dg(*b, g), dm(*b, m0);
      Buffer<bf16> du(*b, n), dmb(*b, mb0), dub(*b, n);
      b->momentum_f32(n, 0.95f, nesterov, dg.data(), dm.data(), du.data());
      b->momentum_bf16(n, 0.95f, nesterov, dg.data(), dmb.data(), dub.data());
      m[k] = dm.host();
      u[k] = du.host();
      mb[k] = dmb.host();
      ub[k] = dub.host();
      ++k;
    }
    CHECK(same_bits(m[0], m[1]));
    CHECK(same_bits(u[0], u[1]));
    CHECK(same_bits(mb[0], mb[1]));
    CHECK(same_bits(ub[0], ub[1]));
  }

  const std::vector<bf16> o = random_bf16(n, 24);
  const float decay = 1.0f - 0.02f * 0.1f, s = 0.02f * 0.2f * std::sqrt(4096.0f);
  std::vector<float> w[2];
  int k = 0;
  for (Backend* b : {p.cpu.get(), static_cast<Backend*>(p.cuda.get())}) {
    Buffer<bf16> dobuf(*b, o);
    w[k++] = run_on(
        *b, w0, [&](Backend& be, float* dw) { be.apply_update(n, decay, s, dobuf.data(), dw); });
  }
  CHECK(same_bits(w[0], w[1]));

  // AdamW over several steps (bias correction on the host, as the CPU backend computes it).
  std::vector<float> aw[2], am[2], av[2];
  k = 0;
  for (Backend* b : {p.cpu.get(), static_cast<Backend*>(p.cuda.get())}) {
    Buffer<float> dw(*b, w0), dm(*b, n), dv(*b, n);
    for (int64_t step = 1; step <= 4; ++step) {
      Buffer<float> dg(*b, random_f32(n, 30 + step, 1e-3f));
      b->adamw(n, 3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, step, dg.data(), dw.data(), dm.data(),
               dv.data());
    }
    aw[k] = dw.host();
    am[k] = dm.host();
    av[k] = dv.host();
    ++k;
  }
  CHECK(same_bits(am[0], am[1]));
  CHECK(same_bits(av[0], av[1]));
  INFO("adamw w: first difference at " << first_difference(aw[0], aw[1]));
  CHECK(same_bits(aw[0], aw[1]));
  Buffer<float> dummy(*p.cuda, 1);
  CHECK_THROWS_AS(p.cuda->adamw(1, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.0f, 0, dummy.data(), dummy.data(),
                                dummy.data(), dummy.data()),
                  std::invalid_argument);
}

TEST_CASE("cuda: scale_bf16, ns_scale and transpose give the CPU backend's bits", "[backend]") {
  Pair p;
  const std::vector<float> scales = {0.5f, 3.0e-3f, 7.25f};
  const std::vector<bf16> x = random_bf16(3 * 100001, 33);
  std::vector<bf16> y[2];
  int k = 0;
  for (Backend* b : {p.cpu.get(), static_cast<Backend*>(p.cuda.get())}) {
    Buffer<float> ds(*b, scales);
    y[k++] = run_on(*b, x, [&](Backend& be, bf16* dx) {
      be.scale_bf16(3, 100001, dx, ds.data(), dx);  // in place
    });
  }
  CHECK(same_bits(y[0], y[1]));

  const std::vector<float> sum_sq = {4.0f, 0.0f, 12345.678f, 1e-30f, 3.5e37f};
  std::vector<float> inv[2];
  k = 0;
  for (Backend* b : {p.cpu.get(), static_cast<Backend*>(p.cuda.get())}) {
    Buffer<float> dss(*b, sum_sq), dinv(*b, 5);
    b->ns_scale(5, dss.data(), 1.02, 1e-8, dinv.data());
    inv[k++] = dinv.host();
  }
  CHECK(same_bits(inv[0], inv[1]));

  struct T {
    int64_t batch, rows, cols;
  };
  for (const T& t : {T{2, 70, 45}, T{3, 37, 53}, T{1, 1, 1000}, T{1, 2048, 768}}) {
    const std::vector<bf16> in = random_bf16(t.batch * t.rows * t.cols, 34);
    std::vector<bf16> out[2];
    k = 0;
    for (Backend* b : {p.cpu.get(), static_cast<Backend*>(p.cuda.get())}) {
      Buffer<bf16> din(*b, in), dout(*b, in.size());
      b->transpose_bf16(t.batch, t.rows, t.cols, din.data(), dout.data());
      out[k++] = dout.host();
    }
    INFO(t.batch << " x " << t.rows << " x " << t.cols);
    CHECK(same_bits(out[0], out[1]));
  }
}

TEST_CASE("cuda: sum_squares is within an ulp of the CPU's and the same run to run", "[backend]") {
  Pair p;
  const int64_t batch = 3, elems = 1000003;  // many chunks and a ragged tail
  const std::vector<bf16> x = random_bf16(batch * elems, 51, 3.0f);
  std::vector<float> s[2];
  int k = 0;
  for (Backend* b : {p.cpu.get(), static_cast<Backend*>(p.cuda.get())}) {
    Buffer<bf16> dx(*b, x);
    Buffer<float> out(*b, batch);
    b->sum_squares_bf16(batch, elems, dx.data(), out.data());
    s[k++] = out.host();
  }
  for (int64_t i = 0; i < batch; ++i) {
    CHECK(std::fabs(double(s[1][i]) - s[0][i]) <= std::ldexp(double(s[0][i]), -23));
  }
  // The same bits again, on another lane, and for one matrix alone.
  Buffer<bf16> dx(*p.cuda, x);
  Buffer<float> again(*p.cuda, batch), alone(*p.cuda, 1);
  p.cuda->set_lane(2);
  p.cuda->sum_squares_bf16(batch, elems, dx.data(), again.data());
  p.cuda->sum_squares_bf16(1, elems, dx.data() + elems, alone.data());
  p.cuda->synchronize();
  p.cuda->set_lane(0);
  CHECK(same_bits(again.host(), s[1]));
  CHECK(float_bits(alone.host()[0]) == float_bits(s[1][1]));
}

TEST_CASE("cuda: gemm_bf16 is exact on small integers and within bf16 rounding otherwise",
          "[backend]") {
  Pair p;
  for (const GemmCase& g : kGemmCases) {
    INFO("batch " << g.batch << " m " << g.m << " n " << g.n << " k " << g.k << " ta " << g.ta
                  << " tb " << g.tb << " pad " << g.pad);
    for (const auto& [alpha, beta] : {std::pair{1.0f, 0.0f}, {0.5f, -2.0f}}) {
      // Small integers: every product and partial sum is exact in fp32 (|sum| < 2^24), so any
      // accumulation order gives the same bits: this checks operand order, ld and stride.
      const GemmOut exact = run_gemm(p, g, alpha, beta, true);
      CHECK(first_difference(exact.cpu, exact.cuda) == -1);
      // Real operands: two fp32 accumulation orders, one rounding each.
      const GemmOut real = run_gemm(p, g, alpha, beta, false);
      const double rel = relative_difference(real.cuda, real.cpu);
      INFO("relative difference " << rel);
      CHECK(rel < 2e-3);
    }
  }
  // k = 0 scales C by beta (or zeroes it); beta 0 does not read C (NaN there stays out).
  const std::vector<bf16> c = random_bf16(6, 5);
  Buffer<bf16> dc(*p.cuda, c), dummy(*p.cuda, 1);
  const MatrixBatch none{dummy.data(), 0, 0, 1, 0};
  p.cuda->gemm_bf16(1, false, false, 2, 3, 0, 1.0f, none, none, 3.0f,
                    MatrixBatch{dc.data(), 2, 3, 3, 6});
  const std::vector<bf16> scaled = dc.host();
  for (int i = 0; i < 6; ++i) CHECK(scaled[i].bits == to_bf16(3.0f * to_float(c[i])).bits);
  std::vector<bf16> nan_c(4 * 4, bf16{0x7fc0}), ones(4 * 4, to_bf16(1.0f));
  Buffer<bf16> dn(*p.cuda, nan_c), d1(*p.cuda, ones);
  const MatrixBatch m4{d1.data(), 4, 4, 4, 16};
  p.cuda->gemm_bf16(1, false, false, 4, 4, 4, 1.0f, m4, m4, 0.0f,
                    MatrixBatch{dn.data(), 4, 4, 4, 16});
  for (bf16 v : dn.host()) CHECK(to_float(v) == 4.0f);
  // Bad shapes and overlap are refused as on the CPU backend.
  CHECK_THROWS_AS(p.cuda->gemm_bf16(1, false, false, 4, 4, 4, 1, m4, m4, 0, m4),
                  std::invalid_argument);
  CHECK_THROWS_AS(p.cuda->gemm_bf16(1, false, false, 4, 4, 4, 1, m4, m4, 0,
                                    MatrixBatch{dn.data(), 2, 8, 8, 16}),
                  std::invalid_argument);
}

TEST_CASE("cuda: syrk_bf16 equals the GEMM and comes out exactly symmetric", "[backend]") {
  // Tiles of 64 (via the environment, read at construction) split n = 200 into full blocks,
  // an edge column and a corner; the default tiles take the single-GEMM path at this size.
  for (const char* tile : {"64", ""}) {
    if (*tile) {
      setenv("MUONPLAN_SYRK_TILE", tile, 1);
    } else {
      unsetenv("MUONPLAN_SYRK_TILE");
    }
    Pair p;
    unsetenv("MUONPLAN_SYRK_TILE");
    struct S {
      int64_t batch, n, k, lda_pad;
    };
    // lda_pad 3 leaves the rows unaligned: the backend falls back to one GEMM, then mirrors.
    for (const S& s : {S{3, 200, 96, 0}, S{2, 256, 512, 0}, S{1, 130, 40, 3}, S{2, 64, 64, 0}}) {
      INFO("tile '" << tile << "' batch " << s.batch << " n " << s.n << " k " << s.k << " pad "
                    << s.lda_pad << " (cuda tile " << p.cuda->syrk_tile(s.n) << ")");
      const int64_t lda = s.k + s.lda_pad;
      std::vector<bf16> a(s.batch * s.n * lda), c(s.batch * s.n * s.n);
      fill_small_integers(a, 61);
      std::vector<bf16> r(c.size());
      fill_small_integers(r, 62);
      for (int64_t b = 0; b < s.batch; ++b) {  // a symmetric C, as beta != 0 requires
        for (int64_t i = 0; i < s.n; ++i) {
          for (int64_t j = 0; j < s.n; ++j) {
            c[b * s.n * s.n + i * s.n + j] =
                r[b * s.n * s.n + std::min(i, j) * s.n + std::max(i, j)];
          }
        }
      }
      const MatrixBatch am_shape{nullptr, s.n, s.k, lda, s.n * lda};
      std::vector<bf16> gemm_cpu, syrk_cuda;
      {
        Buffer<bf16> da(*p.cpu, a), dc(*p.cpu, c);
        MatrixBatch am = am_shape;
        am.ptr = da.data();
        p.cpu->gemm_bf16(s.batch, false, true, s.n, s.n, s.k, 0.5f, am, am, -1.0f,
                         MatrixBatch{dc.data(), s.n, s.n, s.n, s.n * s.n});
        gemm_cpu = dc.host();
      }
      {
        Buffer<bf16> da(*p.cuda, a), dc(*p.cuda, c);
        MatrixBatch am = am_shape;
        am.ptr = da.data();
        p.cuda->syrk_bf16(s.batch, s.n, s.k, 0.5f, am, -1.0f,
                          MatrixBatch{dc.data(), s.n, s.n, s.n, s.n * s.n});
        syrk_cuda = dc.host();
      }
      CHECK(first_difference(gemm_cpu, syrk_cuda) == -1);
      int64_t asymmetric = 0;
      for (int64_t b = 0; b < s.batch; ++b) {
        for (int64_t i = 0; i < s.n; ++i) {
          for (int64_t j = 0; j < i; ++j) {
            asymmetric += syrk_cuda[b * s.n * s.n + i * s.n + j].bits !=
                          syrk_cuda[b * s.n * s.n + j * s.n + i].bits;
          }
        }
      }
      CHECK(asymmetric == 0);
    }
  }
}

TEST_CASE("cuda: lanes run their own calls in order; synchronize waits for all of them",
          "[backend]") {
  Pair p;
  CudaBackend& b = *p.cuda;
  const int64_t n = 1 << 22;
  const std::vector<float> g = random_f32(n, 71);
  std::vector<std::unique_ptr<Buffer<float>>> own;
  Buffer<float> dg(b, g);
  for (int lane = 0; lane < Backend::kMaxLanes; ++lane) {
    b.set_lane(lane);
    CHECK(b.lane() == lane);
    own.push_back(std::make_unique<Buffer<float>>(b, n));  // zero-filled on this lane
    Buffer<bf16> u(b, n);
    for (int r = 0; r <= lane; ++r)
      b.momentum_f32(n, 0.5f, false, dg.data(), own.back()->data(), u.data());
  }
  b.synchronize();
  b.set_lane(0);
  for (int lane = 0; lane < Backend::kMaxLanes; ++lane) {
    // lane + 1 folds of m = 0.5 m + g from 0.
    const std::vector<float> m = own[lane]->host();
    for (int64_t i = 0; i < n; i += 4099) {
      float want = 0;
      for (int r = 0; r <= lane; ++r) want = 0.5f * want + g[i];
      REQUIRE(float_bits(m[i]) == float_bits(want));
    }
  }
  CHECK_THROWS_AS(b.set_lane(Backend::kMaxLanes), std::invalid_argument);
  // A buffer freed on another lane than the one that allocated it.
  b.set_lane(1);
  void* x = b.alloc(1 << 20);
  b.set_lane(3);
  b.free(x);
  b.synchronize();
  b.set_lane(0);
}
