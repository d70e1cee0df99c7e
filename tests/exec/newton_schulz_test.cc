// Newton-Schulz on the CPU backend: error against the fp64 reference, singular values per
// schedule, and the bit-exactness the sharded step relies on (transpose, batch, threads).
#include <omp.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>

#include "exec_test_util.h"
#include "muonplan/exec/newton_schulz.h"
#include "muonplan/exec/ns_reference.h"

using namespace muonplan;
using namespace muonplan::exec;
using namespace muonplan::exec::test;

namespace {

std::vector<bf16> run_ns(Backend& backend, const NsSchedule& schedule, int64_t batch, int64_t rows,
                         int64_t cols, const std::vector<bf16>& u) {
  Buffer<bf16> x(backend, u);
  NsWorkspace ws(backend, batch, rows, cols);
  newton_schulz(backend, schedule, batch, rows, cols, x.data(), ws);
  return x.host();
}

std::vector<bf16> transposed(const std::vector<bf16>& x, int64_t rows, int64_t cols) {
  std::vector<bf16> t(x.size());
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) t[j * rows + i] = x[i * cols + j];
  }
  return t;
}

double relative_error(const std::vector<bf16>& got, const std::vector<double>& want) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = to_float(got[i]) - want[i];
    diff += d * d;
    norm += want[i] * want[i];
  }
  return std::sqrt(diff / norm);
}

// Eigenvalues of a symmetric n x n matrix (row-major, destroyed) by cyclic Jacobi rotations.
std::vector<double> jacobi_eigenvalues(std::vector<double> a, int64_t n) {
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0, total = 0;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        total += a[i * n + j] * a[i * n + j];
        if (i != j) off += a[i * n + j] * a[i * n + j];
      }
    }
    if (off <= 1e-26 * total) break;
    for (int64_t p = 0; p < n; ++p) {
      for (int64_t q = p + 1; q < n; ++q) {
        const double apq = a[p * n + q];
        if (apq == 0) continue;
        const double theta = (a[q * n + q] - a[p * n + p]) / (2 * apq);
        const double t = std::copysign(1.0, theta) / (std::fabs(theta) + std::hypot(theta, 1.0));
        const double c = 1 / std::hypot(t, 1.0), s = t * c;
        for (int64_t k = 0; k < n; ++k) {  // columns p, q
          const double akp = a[k * n + p], akq = a[k * n + q];
          a[k * n + p] = c * akp - s * akq;
          a[k * n + q] = s * akp + c * akq;
        }
        for (int64_t k = 0; k < n; ++k) {  // rows p, q
          const double apk = a[p * n + k], aqk = a[q * n + k];
          a[p * n + k] = c * apk - s * aqk;
          a[q * n + k] = s * apk + c * aqk;
        }
      }
    }
  }
  std::vector<double> eig(n);
  for (int64_t i = 0; i < n; ++i) eig[i] = a[i * n + i];
  return eig;
}

// Singular values of a [rows, cols] bf16 matrix with rows <= cols: sqrt(eig(X X^T)).
std::vector<double> singular_values(const std::vector<bf16>& x, int64_t rows, int64_t cols) {
  std::vector<double> g(rows * rows, 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < rows; ++j) {
      for (int64_t k = 0; k < cols; ++k) {
        g[i * rows + j] += double(to_float(x[i * cols + k])) * to_float(x[j * cols + k]);
      }
    }
  }
  std::vector<double> s = jacobi_eigenvalues(std::move(g), rows);
  for (double& v : s) v = std::sqrt(std::max(v, 0.0));
  return s;
}

}  // namespace

TEST_CASE("Jacobi eigenvalues of a known matrix", "[exec][ns]") {
  // [[2, 1], [1, 2]] has eigenvalues 1 and 3.
  std::vector<double> e = jacobi_eigenvalues({2, 1, 1, 2}, 2);
  std::sort(e.begin(), e.end());
  CHECK(e[0] == Approx(1.0));
  CHECK(e[1] == Approx(3.0));
}

// Each schedule's bf16 error against its own fp64 iteration (the same coefficients), over three
// shapes and three seeds: the figures docs/muon-step.md ("Accuracy") states, median and max
// printed. The 5-step schedules with larger coefficients (polar-express, jordan) round more.
TEST_CASE("bf16 NS against fp64 NS: each schedule's error", "[exec][ns]") {
  auto backend = make_cpu_backend();
  const struct {
    const char* name;
    double lo, median_hi, hi;  // every error > lo; median and max under their bounds
  } bounds[] = {{"quintic", 0.003, 0.0065, 0.0080},
                {"deepseek-v4", 0.003, 0.0065, 0.0080},
                {"polar-express", 0.008, 0.0150, 0.0230},
                {"jordan", 0.008, 0.0150, 0.0230}};
  const std::pair<int64_t, int64_t> shapes[] = {{128, 256}, {256, 128}, {64, 512}};
  for (const auto& b : bounds) {
    const NsSchedule schedule = ns_schedule(b.name);
    std::vector<double> errs;
    for (auto [rows, cols] : shapes) {
      for (uint32_t seed : {61u, 62u, 63u}) {
        const std::vector<bf16> u = random_bf16(rows * cols, seed, 0.02f);
        const std::vector<bf16> got = run_ns(*backend, schedule, 1, rows, cols, u);
        std::vector<double> ud(u.size()), want(u.size());
        for (size_t i = 0; i < u.size(); ++i) ud[i] = to_float(u[i]);
        newton_schulz_reference(schedule, rows, cols, ud.data(), want.data());
        errs.push_back(relative_error(got, want));
      }
    }
    std::sort(errs.begin(), errs.end());
    const double median = errs[errs.size() / 2];
    std::printf("NS %-13s bf16 vs fp64 relative Frobenius error: median %.4f%%, %.4f%% .. %.4f%%\n",
                b.name, 100 * median, 100 * errs.front(), 100 * errs.back());
    INFO(b.name << ": median " << median << ", " << errs.front() << " .. " << errs.back());
    CHECK(errs.front() > b.lo);
    CHECK(median < b.median_hi);
    CHECK(errs.back() < b.hi);
  }
}

TEST_CASE("NS leaves singular values in each schedule's band", "[exec][ns]") {
  auto backend = make_cpu_backend();
  const int64_t rows = 64, cols = 128;
  const std::vector<bf16> u = random_bf16(rows * cols, 71);  // Gaussian: condition about 6
  // docs/muon-step.md: 5-step schedules roughly 0.7-1.2 (jordan's polynomial cycles down to 0.682
  // in exact arithmetic; bf16 measures 0.680).
  for (const char* name : {"quintic", "jordan", "polar-express"}) {
    const std::vector<bf16> x = run_ns(*backend, ns_schedule(name), 1, rows, cols, u);
    const std::vector<double> s = singular_values(x, rows, cols);
    const auto [lo, hi] = std::minmax_element(s.begin(), s.end());
    std::printf("NS %-13s [64, 128]: singular values %.4f .. %.4f\n", name, *lo, *hi);
    INFO(name << ": " << *lo << " .. " << *hi);
    CHECK(*lo >= 0.66);
    CHECK(*hi <= 1.2);
  }
}

// deepseek-v4 converges to 1, and bf16 leaves a band around it that widens as the matrix
// narrows (A = X X^T near I is rounded to bf16 steps of 2^-8 and 2^-7, and a short side has
// fewer terms to average): the bands by shape docs/muon-step.md states, on three seeds each.
TEST_CASE("deepseek-v4's singular values: the band by shape", "[exec][ns]") {
  auto backend = make_cpu_backend();
  const struct {
    int64_t rows, cols;
    double lo, hi;
  } bands[] = {{128, 256, 0.996, 1.005}, {64, 128, 0.996, 1.006}, {16, 1024, 0.997, 1.007}};
  for (const auto& b : bands) {
    double lo = 2, hi = 0;
    for (uint32_t seed : {71u, 72u, 73u}) {
      const std::vector<bf16> u = random_bf16(b.rows * b.cols, seed);
      const std::vector<bf16> x =
          run_ns(*backend, ns_schedule("deepseek-v4"), 1, b.rows, b.cols, u);
      const std::vector<double> s = singular_values(x, b.rows, b.cols);
      lo = std::min(lo, *std::min_element(s.begin(), s.end()));
      hi = std::max(hi, *std::max_element(s.begin(), s.end()));
    }
    std::printf("NS deepseek-v4 [%lld, %lld], 3 seeds: singular values %.4f .. %.4f\n",
                (long long)b.rows, (long long)b.cols, lo, hi);
    INFO("[" << b.rows << ", " << b.cols << "]: " << lo << " .. " << hi);
    CHECK(lo >= b.lo);
    CHECK(hi <= b.hi);
  }
}

TEST_CASE("NS of a transposed input is the transposed result, bit for bit", "[exec][ns]") {
  auto backend = make_cpu_backend();
  const NsSchedule sched = ns_schedule("polar-express");
  const int64_t rows = 96, cols = 160;
  const std::vector<bf16> u = random_bf16(rows * cols, 81);
  const std::vector<bf16> wide = run_ns(*backend, sched, 1, rows, cols, u);
  const std::vector<bf16> tall = run_ns(*backend, sched, 1, cols, rows, transposed(u, rows, cols));
  CHECK(same_bits(tall, transposed(wide, rows, cols)));
}

TEST_CASE("NS of a batch equals NS of each matrix alone, on any number of threads", "[exec][ns]") {
  auto backend = make_cpu_backend();
  const NsSchedule sched = ns_schedule("quintic");
  const int64_t batch = 3, rows = 130, cols = 72;  // tall, ragged row blocks
  const std::vector<bf16> u = random_bf16(batch * rows * cols, 91);
  const std::vector<bf16> all = run_ns(*backend, sched, batch, rows, cols, u);
  for (int64_t b = 0; b < batch; ++b) {
    const std::vector<bf16> one(u.begin() + b * rows * cols, u.begin() + (b + 1) * rows * cols);
    const std::vector<bf16> alone = run_ns(*backend, sched, 1, rows, cols, one);
    const std::vector<bf16> part(all.begin() + b * rows * cols,
                                 all.begin() + (b + 1) * rows * cols);
    CHECK(same_bits(alone, part));
  }
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const std::vector<bf16> serial = run_ns(*backend, sched, batch, rows, cols, u);
  omp_set_num_threads(threads);
  CHECK(same_bits(serial, all));
}

TEST_CASE("NS workspace size, reuse and errors, and a zero matrix stays zero", "[exec][ns]") {
  auto backend = make_cpu_backend();
  const NsSchedule sched = ns_schedule("jordan");
  // X and the next X (2 x 2 m n bytes), A and B (2 x 2 m^2 bytes), two floats per matrix.
  CHECK(ns_workspace_bytes(2, 64, 128) == 2 * (2 * 2 * 64 * 128) + 2 * (2 * 2 * 64 * 64) + 2 * 256);
  CHECK(ns_workspace_bytes(2, 128, 64) == ns_workspace_bytes(2, 64, 128));
  {
    NsWorkspace ws(*backend, 2, 64, 128);
    CHECK(backend->memory().current_bytes == ws.bytes());
    CHECK(ws.fits(1, 128, 64));
    CHECK(!ws.fits(3, 64, 128));
    Buffer<bf16> x(*backend, 3 * 64 * 128);
    CHECK_THROWS_AS(newton_schulz(*backend, sched, 3, 64, 128, x.data(), ws),
                    std::invalid_argument);
    newton_schulz(*backend, sched, 1, 64, 128, x.data(), ws);  // zeros in, zeros out
    for (bf16 v : x.host()) REQUIRE(v.bits == 0);
    auto other = make_cpu_backend();
    CHECK_THROWS_AS(newton_schulz(*other, sched, 1, 64, 128, x.data(), ws), std::invalid_argument);
  }
  CHECK(backend->memory().current_bytes == 0);
}
