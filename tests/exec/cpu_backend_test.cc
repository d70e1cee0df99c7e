// CPU backend: memory accounting, gemm_bf16 against double loops, elementwise kernels against
// their scalar formulas (exact fp32 equality: the library rounds every operation as written),
// and results that do not depend on the number of threads.
#include <omp.h>

#include <cstring>

#include <catch2/catch.hpp>
#include <cmath>

#include "exec_test_util.h"
#include "muonplan/exec/backend.h"

using namespace muonplan::exec;
using namespace muonplan::exec::test;

namespace {

struct GemmCase {
  int64_t batch, m, n, k;
  bool ta, tb;
};

// Stored layout of one operand: [rows, cols] with ld = cols + pad, stride = rows * ld + pad.
struct Stored {
  int64_t rows, cols, ld, stride;
  MatrixBatch at(void* p) const { return MatrixBatch{p, rows, cols, ld, stride}; }
  int64_t elems(int64_t batch) const { return batch * stride; }
  int64_t index(int64_t b, int64_t i, int64_t j) const { return b * stride + i * ld + j; }
};

Stored stored(int64_t rows, int64_t cols, int64_t pad) {
  return Stored{rows, cols, cols + pad, rows * (cols + pad) + pad};
}

// Double-precision C = alpha op(A) op(B) + beta C, not rounded.
std::vector<double> gemm_reference(const GemmCase& g, float alpha, const std::vector<bf16>& a,
                                   const Stored& sa, const std::vector<bf16>& b, const Stored& sb,
                                   float beta, const std::vector<bf16>& c, const Stored& sc) {
  std::vector<double> out(g.batch * g.m * g.n);
  for (int64_t bi = 0; bi < g.batch; ++bi) {
    for (int64_t i = 0; i < g.m; ++i) {
      for (int64_t j = 0; j < g.n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < g.k; ++p) {
          const double av = to_float(a[g.ta ? sa.index(bi, p, i) : sa.index(bi, i, p)]);
          const double bv = to_float(b[g.tb ? sb.index(bi, j, p) : sb.index(bi, p, j)]);
          acc += av * bv;
        }
        const double cv = beta == 0.0f ? 0.0 : double(to_float(c[sc.index(bi, i, j)]));
        out[(bi * g.m + i) * g.n + j] = double(alpha) * acc + double(beta) * cv;
      }
    }
  }
  return out;
}

struct GemmRun {
  std::vector<bf16> a, b, c, result;
  Stored sa, sb, sc;
};

// Runs gemm_bf16 on operands from `fill` (padded layouts) and returns inputs and the result.
template <typename Fill>
GemmRun run_gemm(Backend& backend, const GemmCase& g, float alpha, float beta, Fill fill) {
  GemmRun r;
  r.sa = stored(g.ta ? g.k : g.m, g.ta ? g.m : g.k, 3);
  r.sb = stored(g.tb ? g.n : g.k, g.tb ? g.k : g.n, 5);
  r.sc = stored(g.m, g.n, 2);
  r.a.resize(r.sa.elems(g.batch));
  r.b.resize(r.sb.elems(g.batch));
  r.c.resize(r.sc.elems(g.batch));
  fill(r.a, 1);
  fill(r.b, 2);
  fill(r.c, 3);
  Buffer<bf16> da(backend, r.a), db(backend, r.b), dc(backend, r.c);
  backend.gemm_bf16(g.batch, g.ta, g.tb, g.m, g.n, g.k, alpha, r.sa.at(da.data()),
                    r.sb.at(db.data()), beta, r.sc.at(dc.data()));
  r.result = dc.host();
  return r;
}

void fill_small_integers(std::vector<bf16>& v, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-8, 8);
  for (bf16& x : v) x = to_bf16(static_cast<float>(d(rng)));
}

void fill_normal(std::vector<bf16>& v, uint32_t seed) {
  v = random_bf16(v.size(), seed);
}

const GemmCase kCases[] = {
    {3, 5, 7, 9, false, false},  {2, 17, 33, 65, false, true},   {2, 33, 17, 40, true, false},
    {1, 70, 90, 64, true, true}, {2, 130, 20, 31, false, false},
};

}  // namespace

TEST_CASE("cpu backend counts current and peak bytes, and alloc zero-fills", "[exec][cpu]") {
  auto backend = make_cpu_backend();
  CHECK(backend->name() == "cpu");
  void* a = backend->alloc(1000);
  void* b = backend->alloc(24);
  CHECK(backend->memory().current_bytes == 1024);
  CHECK(backend->memory().peak_bytes == 1024);
  std::vector<unsigned char> host(1000, 0xff);
  backend->copy_to_host(host.data(), a, 1000);
  CHECK(std::all_of(host.begin(), host.end(), [](unsigned char v) { return v == 0; }));
  backend->free(a);
  CHECK(backend->memory().current_bytes == 24);
  CHECK(backend->memory().peak_bytes == 1024);
  backend->reset_peak();
  CHECK(backend->memory().peak_bytes == 24);
  backend->free(b);
  CHECK(backend->memory().current_bytes == 0);
  int not_ours = 0;
  CHECK_THROWS_AS(backend->free(&not_ours), std::invalid_argument);
}

TEST_CASE("gemm_bf16 equals a double loop rounded once (exact operands)", "[exec][cpu]") {
  // Small integers keep every fp32 partial sum exact, so the only rounding left is the final
  // bf16 one, and it must match the double result's bit for bit (ties included), on each path
  // (the oneDNN one for these small shapes too).
  for (auto gemm : {CpuGemm::onednn, CpuGemm::openblas}) {
    auto backend = make_cpu_backend(gemm, 0);
    for (const GemmCase& g : kCases) {
      for (auto [alpha, beta] : {std::pair{1.0f, 0.0f}, {0.5f, -1.5f}, {-2.0f, 1.0f}}) {
        INFO("batch " << g.batch << " m " << g.m << " n " << g.n << " k " << g.k << " ta " << g.ta
                      << " tb " << g.tb << " alpha " << alpha << " beta " << beta);
        const GemmRun r = run_gemm(*backend, g, alpha, beta, fill_small_integers);
        const std::vector<double> ref =
            gemm_reference(g, alpha, r.a, r.sa, r.b, r.sb, beta, r.c, r.sc);
        for (int64_t bi = 0; bi < g.batch; ++bi) {
          for (int64_t i = 0; i < g.m; ++i) {
            for (int64_t j = 0; j < g.n; ++j) {
              const double want = ref[(bi * g.m + i) * g.n + j];
              REQUIRE(static_cast<double>(static_cast<float>(want)) == want);
              REQUIRE(r.result[r.sc.index(bi, i, j)].bits ==
                      to_bf16(static_cast<float>(want)).bits);
            }
          }
          // Padding between rows and matrices is left alone.
          for (int64_t i = 0; i < g.m; ++i) {
            REQUIRE(r.result[r.sc.index(bi, i, g.n)].bits == r.c[r.sc.index(bi, i, g.n)].bits);
          }
        }
      }
    }
  }
}

TEST_CASE("gemm_bf16 on real operands is within fp32 accumulation error of the exact result",
          "[exec][cpu]") {
  // fp32 accumulation of k products (in any order or blocking, with or without FMA: OpenBLAS
  // picks its kernel by CPU and OPENBLAS_CORETYPE) errs by at most gamma_k * sum |a_i b_i|,
  // gamma_k = k u / (1 - k u), u = 2^-24 (Higham, Accuracy and Stability, 3.1). That bound is
  // relative to the sum of magnitudes, not to the result: where the terms cancel, the result's
  // own bf16 spacing is far smaller than the error. Then alpha, beta C and the final bf16
  // rounding add one bf16 spacing at most.
  auto backend = make_cpu_backend();
  const float alpha = 0.75f, beta = 0.3f;
  for (const GemmCase& g : kCases) {
    const GemmRun r = run_gemm(*backend, g, alpha, beta, fill_normal);
    const std::vector<double> ref = gemm_reference(g, alpha, r.a, r.sa, r.b, r.sb, beta, r.c, r.sc);
    std::vector<bf16> abs_a(r.a.size()), abs_b(r.b.size()), abs_c(r.c.size());
    auto absolute = [](const std::vector<bf16>& v, std::vector<bf16>& out) {
      for (size_t i = 0; i < v.size(); ++i)
        out[i] = bf16{static_cast<uint16_t>(v[i].bits & 0x7fff)};
    };
    absolute(r.a, abs_a);
    absolute(r.b, abs_b);
    absolute(r.c, abs_c);
    const std::vector<double> magnitude =
        gemm_reference(g, alpha, abs_a, r.sa, abs_b, r.sb, beta, abs_c, r.sc);
    const double u = std::ldexp(1.0, -24);
    const double gamma = (g.k + 2) * u / (1 - (g.k + 2) * u);  // k products, alpha, beta C
    for (int64_t bi = 0; bi < g.batch; ++bi) {
      for (int64_t i = 0; i < g.m; ++i) {
        for (int64_t j = 0; j < g.n; ++j) {
          const double want = ref[(bi * g.m + i) * g.n + j];
          const double got = to_float(r.result[r.sc.index(bi, i, j)]);
          const double accumulation = gamma * magnitude[(bi * g.m + i) * g.n + j];
          // One bf16 spacing (8 significant bits) at the binade of the fp32 value rounded.
          const double top = std::fabs(want) + accumulation;
          const double spacing = top == 0 ? 0 : std::ldexp(1.0, std::ilogb(top) - 7);
          INFO("want " << want << " got " << got << " accumulation bound " << accumulation);
          REQUIRE(std::fabs(got - want) <= accumulation + spacing);
        }
      }
    }
  }
}

TEST_CASE("gemm_bf16 with beta 0 does not read C, and k = 0 scales C", "[exec][cpu]") {
  auto backend = make_cpu_backend();
  const GemmCase g{2, 9, 11, 13, false, false};
  const GemmRun r = run_gemm(*backend, g, 1.0f, 0.0f, [](std::vector<bf16>& v, uint32_t seed) {
    if (seed == 3) {
      std::fill(v.begin(), v.end(), bf16{0x7fc0});  // NaN in C
    } else {
      fill_small_integers(v, seed);
    }
  });
  for (int64_t bi = 0; bi < g.batch; ++bi) {
    for (int64_t i = 0; i < g.m; ++i) {
      for (int64_t j = 0; j < g.n; ++j)
        REQUIRE(!std::isnan(to_float(r.result[r.sc.index(bi, i, j)])));
    }
  }

  std::vector<bf16> c = random_bf16(6, 5);
  Buffer<bf16> dc(*backend, c);
  Buffer<bf16> dummy(*backend, 1);
  const MatrixBatch none{dummy.data(), 0, 0, 1, 0};
  backend->gemm_bf16(1, false, false, 2, 3, 0, 1.0f, none, none, 3.0f,
                     MatrixBatch{dc.data(), 2, 3, 3, 6});
  const std::vector<bf16> out = dc.host();
  for (int i = 0; i < 6; ++i) CHECK(out[i].bits == to_bf16(3.0f * to_float(c[i])).bits);
}

TEST_CASE("gemm_bf16 rejects a C that overlaps its inputs and mismatched shapes", "[exec][cpu]") {
  auto backend = make_cpu_backend();
  Buffer<bf16> x(*backend, 64);
  const MatrixBatch m8{x.data(), 8, 8, 8, 64};
  CHECK_THROWS_AS(backend->gemm_bf16(1, false, false, 8, 8, 8, 1, m8, m8, 0, m8),
                  std::invalid_argument);
  Buffer<bf16> y(*backend, 64);
  const MatrixBatch wrong{y.data(), 4, 16, 16, 64};
  CHECK_THROWS_AS(backend->gemm_bf16(1, false, false, 8, 8, 8, 1, m8, m8, 0, wrong),
                  std::invalid_argument);
}

TEST_CASE("momentum kernels follow their scalar formulas exactly", "[exec][cpu]") {
  auto backend = make_cpu_backend();
  const int64_t n = 10001;
  const std::vector<float> g = random_f32(n, 21), m0 = random_f32(n, 22);
  const float mu = 0.95f;
  for (bool nesterov : {false, true}) {
    INFO("nesterov " << nesterov);
    {
      Buffer<float> dg(*backend, g), dm(*backend, m0);
      Buffer<bf16> du(*backend, n);
      backend->momentum_f32(n, mu, nesterov, dg.data(), dm.data(), du.data());
      const std::vector<float> m = dm.host();
      const std::vector<bf16> u = du.host();
      for (int64_t i = 0; i < n; ++i) {
        const float mi = mu * m0[i] + g[i];
        REQUIRE(float_bits(m[i]) == float_bits(mi));
        REQUIRE(u[i].bits == to_bf16(nesterov ? mu * mi + g[i] : mi).bits);
      }
    }
    {
      std::vector<bf16> mb0(n);
      for (int64_t i = 0; i < n; ++i) mb0[i] = to_bf16(m0[i]);
      Buffer<float> dg(*backend, g);
      Buffer<bf16> dm(*backend, mb0), du(*backend, n);
      backend->momentum_bf16(n, mu, nesterov, dg.data(), dm.data(), du.data());
      const std::vector<bf16> m = dm.host(), u = du.host();
      for (int64_t i = 0; i < n; ++i) {
        const float gi = round_bf16(g[i]);
        const bf16 mi = to_bf16(mu * to_float(mb0[i]) + gi);
        REQUIRE(m[i].bits == mi.bits);
        REQUIRE(u[i].bits == (nesterov ? to_bf16(mu * to_float(mi) + gi) : mi).bits);
      }
    }
  }
}

TEST_CASE("apply_update, scale_bf16, ns_scale and transpose follow their formulas", "[exec][cpu]") {
  auto backend = make_cpu_backend();
  const int64_t n = 4099;
  const std::vector<float> w0 = random_f32(n, 31);
  const std::vector<bf16> o = random_bf16(n, 32);
  Buffer<float> dw(*backend, w0);
  Buffer<bf16> dobuf(*backend, o);
  const float decay = 1.0f - 0.02f * 0.1f, s = 0.02f * 0.2f * std::sqrt(4096.0f);
  backend->apply_update(n, decay, s, dobuf.data(), dw.data());
  const std::vector<float> w = dw.host();
  for (int64_t i = 0; i < n; ++i) {
    REQUIRE(float_bits(w[i]) == float_bits(w0[i] * decay - s * to_float(o[i])));
  }

  const std::vector<float> scales = {0.5f, 3.0e-3f, 7.25f};
  Buffer<float> dscale(*backend, scales);
  const std::vector<bf16> x = random_bf16(3 * 1001, 33);
  Buffer<bf16> dx(*backend, x);
  backend->scale_bf16(3, 1001, dx.data(), dscale.data(), dx.data());  // in place
  const std::vector<bf16> y = dx.host();
  for (int64_t i = 0; i < 3 * 1001; ++i) {
    REQUIRE(y[i].bits == to_bf16(to_float(x[i]) * scales[i / 1001]).bits);
  }

  const std::vector<float> sum_sq = {4.0f, 0.0f, 12345.678f};
  Buffer<float> dss(*backend, sum_sq), dinv(*backend, 3);
  backend->ns_scale(3, dss.data(), 1.02, 1e-8, dinv.data());
  const std::vector<float> inv = dinv.host();
  for (int i = 0; i < 3; ++i) {
    CHECK(inv[i] == static_cast<float>(1.0 / (1.02 * std::sqrt(double(sum_sq[i])) + 1e-8)));
  }

  const int64_t rows = 70, cols = 45;
  const std::vector<bf16> t = random_bf16(2 * rows * cols, 34);
  Buffer<bf16> dt(*backend, t), dtt(*backend, 2 * rows * cols);
  backend->transpose_bf16(2, rows, cols, dt.data(), dtt.data());
  const std::vector<bf16> tt = dtt.host();
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        REQUIRE(tt[b * rows * cols + j * rows + i].bits == t[b * rows * cols + i * cols + j].bits);
      }
    }
  }
}

TEST_CASE("adamw equals a textbook scalar AdamW in fp32", "[exec][cpu]") {
  auto backend = make_cpu_backend();
  const int64_t n = 5003;
  const float lr = 3e-4f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, wd = 0.1f;
  std::vector<float> w = random_f32(n, 41), m(n, 0.0f), v(n, 0.0f);
  Buffer<float> dw(*backend, w), dm(*backend, m), dv(*backend, v);
  for (int64_t step = 1; step <= 3; ++step) {
    const std::vector<float> g = random_f32(n, 42 + step);
    Buffer<float> dg(*backend, g);
    backend->adamw(n, lr, beta1, beta2, eps, wd, step, dg.data(), dw.data(), dm.data(), dv.data());
    // Textbook decoupled AdamW (Loshchilov & Hutter), bias corrections in double.
    const float step_size = static_cast<float>(lr / (1.0 - std::pow(double(beta1), step)));
    const float sqrt_bc2 = static_cast<float>(std::sqrt(1.0 - std::pow(double(beta2), step)));
    for (int64_t i = 0; i < n; ++i) {
      m[i] = beta1 * m[i] + (1.0f - beta1) * g[i];
      v[i] = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
      const float denom = std::sqrt(v[i]) / sqrt_bc2 + eps;
      w[i] = w[i] * (1.0f - lr * wd) - step_size * (m[i] / denom);
    }
  }
  const std::vector<float> wh = dw.host(), mh = dm.host(), vh = dv.host();
  for (int64_t i = 0; i < n; ++i) {
    REQUIRE(float_bits(mh[i]) == float_bits(m[i]));
    REQUIRE(float_bits(vh[i]) == float_bits(v[i]));
    REQUIRE(float_bits(wh[i]) == float_bits(w[i]));
  }
  std::vector<float> g(n);
  Buffer<float> dg(*backend, g);
  CHECK_THROWS_AS(
      backend->adamw(n, lr, beta1, beta2, eps, wd, 0, dg.data(), dw.data(), dm.data(), dv.data()),
      std::invalid_argument);
}

TEST_CASE("sum_squares and gemm give the same bits on 1 and 2 threads", "[exec][cpu]") {
  auto backend = make_cpu_backend();
  const int64_t batch = 3, elems = 100003;  // many 4096-element blocks and a ragged tail
  const std::vector<bf16> x = random_bf16(batch * elems, 51, 3.0f);
  Buffer<bf16> dx(*backend, x);
  Buffer<float> s1(*backend, batch), s2(*backend, batch);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  backend->sum_squares_bf16(batch, elems, dx.data(), s1.data());
  omp_set_num_threads(2);
  backend->sum_squares_bf16(batch, elems, dx.data(), s2.data());
  const std::vector<float> h1 = s1.host(), h2 = s2.host();
  for (int64_t b = 0; b < batch; ++b) {
    double exact = 0;
    for (int64_t i = 0; i < elems; ++i) {
      exact += double(to_float(x[b * elems + i])) * to_float(x[b * elems + i]);
    }
    CHECK(float_bits(h1[b]) == float_bits(h2[b]));
    CHECK(h1[b] == Approx(exact).epsilon(1e-6));
  }

  // An odd shape, where OpenBLAS's own threading would change the bits.
  const GemmCase g{2, 300, 500, 700, false, false};
  omp_set_num_threads(1);
  const GemmRun one = run_gemm(*backend, g, 1.0f, 0.5f, fill_normal);
  omp_set_num_threads(2);
  const GemmRun two = run_gemm(*backend, g, 1.0f, 0.5f, fill_normal);
  omp_set_num_threads(threads);
  CHECK(same_bits(one.result, two.result));
}

TEST_CASE("the oneDNN and OpenBLAS GEMM paths differ by fp32 accumulation order only",
          "[exec][cpu][gemm_paths]") {
  // The products of bf16 operands are exact in fp32, so the two paths sum the same k terms and
  // differ only in the order: each is within gamma * sum |a_i b_i| of the exact sum (the test
  // above), so they are within twice that of each other, plus a bf16 spacing for each one's
  // final rounding (docs/executor-numerics.md, "GEMM paths").
  auto onednn = make_cpu_backend(CpuGemm::onednn, 0);  // every shape on oneDNN
  auto openblas = make_cpu_backend(CpuGemm::openblas);
  CHECK(cpu_gemm_path(*openblas) == CpuGemm::openblas);
  if (cpu_gemm_path(*onednn) != CpuGemm::onednn) {
    WARN("oneDNN has no bf16 matmul on this CPU: the backend runs OpenBLAS, nothing to compare");
    return;
  }
  const float alpha = 0.75f, beta = 0.3f;
  int64_t differing = 0, total = 0;
  for (const GemmCase& g : kCases) {
    const GemmRun x = run_gemm(*onednn, g, alpha, beta, fill_normal);
    const GemmRun y = run_gemm(*openblas, g, alpha, beta, fill_normal);  // same seeds
    std::vector<bf16> abs_a(x.a), abs_b(x.b), abs_c(x.c);
    for (auto* v : {&abs_a, &abs_b, &abs_c}) {
      for (bf16& e : *v) e.bits &= 0x7fff;
    }
    const std::vector<double> magnitude =
        gemm_reference(g, alpha, abs_a, x.sa, abs_b, x.sb, beta, abs_c, x.sc);
    const double u = std::ldexp(1.0, -24);
    const double gamma = (g.k + 2) * u / (1 - (g.k + 2) * u);
    for (int64_t bi = 0; bi < g.batch; ++bi) {
      for (int64_t i = 0; i < g.m; ++i) {
        for (int64_t j = 0; j < g.n; ++j) {
          const double a = to_float(x.result[x.sc.index(bi, i, j)]);
          const double b = to_float(y.result[y.sc.index(bi, i, j)]);
          const double accumulation = 2 * gamma * magnitude[(bi * g.m + i) * g.n + j];
          const double top = std::max(std::fabs(a), std::fabs(b)) + accumulation;
          const double spacing = top == 0 ? 0 : std::ldexp(1.0, std::ilogb(top) - 7);
          INFO("onednn " << a << " openblas " << b << " accumulation bound " << accumulation);
          REQUIRE(std::fabs(a - b) <= accumulation + 2 * spacing);
          differing += a != b;
          ++total;
        }
      }
    }
  }
  INFO(differing << " of " << total << " elements differ");
  CHECK(differing < total);
}

TEST_CASE("the oneDNN GEMM path gives the same bits on 1 and 2 threads",
          "[exec][cpu][gemm_paths]") {
  // Sharded runs equal one-rank runs because no result depends on the thread count: fixed row
  // blocks, each oneDNN call on one thread.
  auto backend = make_cpu_backend(CpuGemm::onednn, 0);
  const int threads = omp_get_max_threads();
  const GemmCase g{3, 300, 70, 130, false, true};  // two row blocks per matrix
  std::vector<std::vector<bf16>> results;
  for (int t : {1, 2}) {
    omp_set_num_threads(t);
    results.push_back(run_gemm(*backend, g, 1.0f, 0.5f, fill_normal).result);
  }
  omp_set_num_threads(threads);
  REQUIRE(results[0].size() == results[1].size());
  CHECK(std::memcmp(results[0].data(), results[1].data(), results[0].size() * sizeof(bf16)) == 0);
}
