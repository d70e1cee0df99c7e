// The Backend conformance cases (backend_conformance.h): each runs on every backend the binary
// names, through alloc, copy_to_device, the kernel and copy_to_host only, so a backend with
// lanes or device memory runs it as the CPU backend does.
#include "backend_conformance.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "exec_test_util.h"
#include "muonplan/exec/optimizer_formulas.h"

using namespace muonplan::exec;
using namespace muonplan::exec::test;
using muonplan::exec::conformance::conformance_backends;

namespace {

// Backend memory holding `host`, and the way back.
template <typename T>
struct Device {
  Backend& b;
  T* p;
  size_t n;
  Device(Backend& backend, const std::vector<T>& host)
      : b(backend), p(static_cast<T*>(backend.alloc(host.size() * sizeof(T)))), n(host.size()) {
    b.copy_to_device(p, host.data(), n * sizeof(T));
  }
  Device(Backend& backend, size_t count)
      : b(backend), p(static_cast<T*>(backend.alloc(count * sizeof(T)))), n(count) {}
  ~Device() { b.free(p); }
  std::vector<T> host() const {
    std::vector<T> out(n);
    b.synchronize();
    b.copy_to_host(out.data(), p, n * sizeof(T));
    return out;
  }
};

bool same(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

}  // namespace

TEST_CASE("backend conformance: alloc zero-fills, copies round-trip, bytes are counted",
          "[conformance]") {
  for (const auto& nb : conformance_backends()) {
    DYNAMIC_SECTION(nb.name) {
      const std::unique_ptr<Backend> b = nb.make();
      const size_t before = b->memory().current_bytes;
      {
        Device<float> zero(*b, size_t(1000));
        CHECK(zero.host() == std::vector<float>(1000, 0.0f));
        CHECK(b->memory().current_bytes >= before + 4000);
        CHECK(b->memory().peak_bytes >= b->memory().current_bytes);
        const std::vector<float> x = random_f32(777, 3);
        Device<float> d(*b, x);
        Device<float> copy(*b, x.size());
        b->copy(copy.p, d.p, x.size() * 4);
        CHECK(same(copy.host(), x));
      }
      b->synchronize();
      CHECK(b->memory().current_bytes == before);
    }
  }
}

TEST_CASE("backend conformance: momentum kernels follow their scalar formulas bit for bit",
          "[conformance]") {
  const int64_t n = 1031;  // not a multiple of any vector width: the tails run too
  const std::vector<float> g = random_f32(n, 11, 1e-3f), m0 = random_f32(n, 12, 1e-2f);
  for (const auto& nb : conformance_backends()) {
    for (const bool nesterov : {false, true}) {
      DYNAMIC_SECTION(nb.name << (nesterov ? " nesterov" : "")) {
        const std::unique_ptr<Backend> b = nb.make();
        std::vector<float> m_want = m0;
        std::vector<bf16> u_want(n), mb_want(n), ub_want(n);
        std::vector<bf16> mb0(n);
        for (int64_t i = 0; i < n; ++i) mb0[i] = to_bf16(m0[i]);
        mb_want = mb0;
        for (int64_t i = 0; i < n; ++i) {
          u_want[i] = formula::momentum_f32(0.95f, nesterov, g[i], m_want[i]);
          ub_want[i] = formula::momentum_bf16(0.95f, nesterov, g[i], mb_want[i]);
        }
        Device<float> dg(*b, g), dm(*b, m0);
        Device<bf16> du(*b, size_t(n)), dmb(*b, mb0), dub(*b, size_t(n));
        b->momentum_f32(n, 0.95f, nesterov, dg.p, dm.p, du.p);
        b->momentum_bf16(n, 0.95f, nesterov, dg.p, dmb.p, dub.p);
        CHECK(same(dm.host(), m_want));
        CHECK(same_bits(du.host(), u_want));
        CHECK(same_bits(dmb.host(), mb_want));
        CHECK(same_bits(dub.host(), ub_want));
      }
    }
  }
}

TEST_CASE("backend conformance: apply_update and adamw follow their scalar formulas bit for bit",
          "[conformance]") {
  const int64_t n = 517;
  const std::vector<float> w0 = random_f32(n, 21, 0.02f), g = random_f32(n, 22, 1e-3f);
  const std::vector<bf16> o = random_bf16(n, 23);
  for (const auto& nb : conformance_backends()) {
    DYNAMIC_SECTION(nb.name) {
      const std::unique_ptr<Backend> b = nb.make();
      const float decay = 1.0f - 0.02f * 0.1f, s = 0.0123f;
      std::vector<float> w_want = w0, aw = w0, am(n, 0.0f), av(n, 0.0f);
      for (int64_t i = 0; i < n; ++i) w_want[i] = formula::apply_update(decay, s, o[i], w0[i]);
      const formula::AdamwConstants k =
          formula::adamw_constants(1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 3);
      for (int64_t i = 0; i < n; ++i) formula::adamw(k, g[i], aw[i], am[i], av[i]);
      Device<float> dw(*b, w0), dg(*b, g), daw(*b, w0), dam(*b, size_t(n)), dav(*b, size_t(n));
      Device<bf16> dob(*b, o);
      b->apply_update(n, decay, s, dob.p, dw.p);
      b->adamw(n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 3, dg.p, daw.p, dam.p, dav.p);
      CHECK(same(dw.host(), w_want));
      CHECK(same(daw.host(), aw));
      CHECK(same(dam.host(), am));
      CHECK(same(dav.host(), av));
    }
  }
}

TEST_CASE("backend conformance: casts, scaling and transposes are exact", "[conformance]") {
  const int64_t rows = 7, cols = 13, n = rows * cols;
  const std::vector<float> x = random_f32(n, 31, 3.0f);
  std::vector<bf16> xb(n), scaled(n), t(n);
  for (int64_t i = 0; i < n; ++i) xb[i] = to_bf16(x[i]);
  for (int64_t i = 0; i < n; ++i) scaled[i] = formula::scale_bf16(xb[i], 0.37f);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t[j * rows + i] = xb[i * cols + j];
  for (const auto& nb : conformance_backends()) {
    DYNAMIC_SECTION(nb.name) {
      const std::unique_ptr<Backend> b = nb.make();
      Device<float> dx(*b, x), back(*b, size_t(n));
      Device<bf16> dxb(*b, size_t(n)), ds(*b, size_t(n)), dt(*b, size_t(n));
      b->cast_to_bf16(n, dx.p, dxb.p);
      b->cast_to_f32(n, dxb.p, back.p);
      b->scale_bf16_by(n, 0.37f, dxb.p, ds.p);
      b->transpose_bf16(1, rows, cols, dxb.p, dt.p);
      CHECK(same_bits(dxb.host(), xb));
      std::vector<float> widened(n);
      for (int64_t i = 0; i < n; ++i) widened[i] = to_float(xb[i]);
      CHECK(same(back.host(), widened));
      CHECK(same_bits(ds.host(), scaled));
      CHECK(same_bits(dt.host(), t));
    }
  }
}

TEST_CASE("backend conformance: GEMM exact on small integers; sum of squares by hand",
          "[conformance]") {
  // A [2, 3] = [[1, 2, 3], [4, 5, 6]], B [3, 2] = [[1, -1], [0, 2], [3, 1]]: A B =
  // [[10, 6], [22, 12]], worked by hand; C = 2 A B + 1 C with C = 1 everywhere.
  const std::vector<bf16> a = {to_bf16(1), to_bf16(2), to_bf16(3),
                               to_bf16(4), to_bf16(5), to_bf16(6)};
  const std::vector<bf16> bm = {to_bf16(1), to_bf16(-1), to_bf16(0),
                                to_bf16(2), to_bf16(3),  to_bf16(1)};
  const std::vector<bf16> c0(4, to_bf16(1));
  const std::vector<bf16> want = {to_bf16(21), to_bf16(13), to_bf16(45), to_bf16(25)};
  for (const auto& nb : conformance_backends()) {
    DYNAMIC_SECTION(nb.name) {
      const std::unique_ptr<Backend> b = nb.make();
      Device<bf16> da(*b, a), db(*b, bm), dc(*b, c0);
      b->gemm_bf16(1, false, false, 2, 2, 3, 2.0f, {da.p, 2, 3, 3, 6}, {db.p, 3, 2, 2, 6}, 1.0f,
                   {dc.p, 2, 2, 2, 4});
      CHECK(same_bits(dc.host(), want));
      // Sum of squares of A: 1 + 4 + 9 + 16 + 25 + 36 = 91.
      Device<float> sum(*b, size_t(1));
      b->sum_squares_bf16(1, 6, da.p, sum.p);
      CHECK(sum.host()[0] == 91.0f);
    }
  }
}

TEST_CASE("backend conformance: syrk is exact on small integers; ns_scale follows its formula",
          "[conformance]") {
  // A [5, 7] of integers in [-3, 3]: every element of A A^T is an integer below 64, exact in
  // bf16 whatever the accumulation order; C starts at 1 and beta = 2 (C is symmetric on entry).
  const int64_t n = 5, k = 7;
  std::vector<bf16> a(n * k);
  for (int64_t i = 0; i < n * k; ++i) a[i] = to_bf16(float((i * 5 + 3) % 7 - 3));
  std::vector<bf16> want(n * n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float s = 0;
      for (int64_t l = 0; l < k; ++l) s += to_float(a[i * k + l]) * to_float(a[j * k + l]);
      want[i * n + j] = to_bf16(s + 2.0f);
    }
  }
  const std::vector<float> sum_sq = {91.0f, 0.25f, 3.0e4f};
  std::vector<float> scale_want(sum_sq.size());
  for (size_t i = 0; i < sum_sq.size(); ++i)
    scale_want[i] = formula::ns_scale(1.01, 1e-7, sum_sq[i]);
  for (const auto& nb : conformance_backends()) {
    DYNAMIC_SECTION(nb.name) {
      const std::unique_ptr<Backend> b = nb.make();
      Device<bf16> da(*b, a), dc(*b, std::vector<bf16>(n * n, to_bf16(1.0f)));
      b->syrk_bf16(1, n, k, 1.0f, {da.p, n, k, k, n * k}, 2.0f, {dc.p, n, n, n, n * n});
      CHECK(same_bits(dc.host(), want));
      Device<float> ds(*b, sum_sq), dscale(*b, sum_sq.size());
      b->ns_scale(int64_t(sum_sq.size()), ds.p, 1.01, 1e-7, dscale.p);
      CHECK(same(dscale.host(), scale_want));
    }
  }
}
