// Host kernels (host_kernels.h): each AVX2 + OpenMP kernel equals its plain scalar loop bit for
// bit on awkward sizes and values (denormals, NaN, Inf, -0, bf16 ties), on 1 and 2 threads and on
// aligned (streaming stores) and misaligned arrays; and they compute the Backend's formulas.
//
// NaN results compare as "both NaN": when two different NaNs meet in one operation, x86 returns
// the first operand's, and the compiler may swap the operands of a commutative + or *, so which
// payload survives is not fixed by the source. Every other result compares by its bits.
#include "muonplan/exec/host_kernels.h"

#include <omp.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "exec_test_util.h"
#include "muonplan/exec/backend.h"

using namespace muonplan::exec;
using namespace muonplan::exec::test;

namespace {

// Sizes: empty, below one vector, one vector, vectors plus a tail, several OpenMP blocks, and
// one past the size from which write-only outputs use non-temporal stores.
const std::vector<int64_t> kSizes = {0, 1, 7, 8, 33, 1000003, (int64_t{1} << 21) + 5};

const uint32_t kSpecialF32[] = {
    0x00000000, 0x80000000,                          // +0, -0
    0x00000001, 0x807fffff, 0x00400000, 0x00008000,  // denormals (the last: a bf16 tie)
    0x00018000, 0x80028000,                          // denormal bf16 ties, odd and even
    0x00800000, 0x7f7fffff, 0xff7fffff,              // FLT_MIN, +-FLT_MAX (bf16: infinity)
    0x7f7f7fff, 0x7f7f8000,                          // just below / at the tie to bf16 infinity
    0x7f800000, 0xff800000,                          // +-Inf
    0x7fc00000, 0xffc00000, 0x7f800001, 0xff812345,  // quiet and signalling NaNs
    0x7fa00000, 0x7f80ffff,                          // sNaN with high / only low payload
    0x3f808000, 0x3f818000, 0xbf808000,              // bf16 ties: down, up, negative
    0x3f807fff, 0x3f808001, 0x3f80c000,              // around a tie
};
const uint16_t kSpecialBf16[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x007f, 0x0080, 0x7f7f,
                                 0xff7f, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffc1, 0x3f80};

// n fp32 values: one in eight a special pattern, the rest N(0, 1) times a scale from 1e-39
// (denormal) to 1e30; `positive` takes absolute values of the random ones (AdamW's v).
std::vector<float> mixed_f32(int64_t n, uint32_t seed, bool positive = false) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const float scales[] = {1.0f, 1.0f, 1e-3f, 1e30f, 1e-39f};
  std::vector<float> v(n);
  for (float& x : v) {
    if (rng() % 8 == 0) {
      x = bits_float(kSpecialF32[rng() % std::size(kSpecialF32)]);
    } else {
      x = normal(rng) * scales[rng() % std::size(scales)];
      if (positive) x = std::fabs(x);
    }
  }
  return v;
}

std::vector<bf16> mixed_bf16(int64_t n, uint32_t seed) {
  std::vector<float> f = mixed_f32(n, seed);
  std::mt19937 rng(seed + 1);
  std::vector<bf16> v(n);
  for (int64_t i = 0; i < n; ++i) {
    v[i] = rng() % 8 == 0 ? bf16{kSpecialBf16[rng() % std::size(kSpecialBf16)]} : to_bf16(f[i]);
  }
  return v;
}

// n values of T at a 64-byte boundary plus `offset` elements: offset 0 takes the kernels'
// streaming-store path (on large n), offset 1 the unaligned one.
template <typename T>
class Array {
 public:
  Array(const std::vector<T>& v, int64_t offset)
      : n_(v.size()), offset_(offset), storage_(v.size() + 64 + offset) {
    std::copy(v.begin(), v.end(), data());
  }
  Array(const Array& other) : Array(other.values(), other.offset_) {}
  Array& operator=(const Array&) = delete;

  T* data() const {
    const auto p = reinterpret_cast<uintptr_t>(storage_.data());
    return reinterpret_cast<T*>((p + 63) / 64 * 64) + offset_;
  }
  std::vector<T> values() const { return std::vector<T>(data(), data() + n_); }

 private:
  int64_t n_, offset_;
  mutable std::vector<T> storage_;
};

bool same(float a, float b) {
  return float_bits(a) == float_bits(b) || (std::isnan(a) && std::isnan(b));
}
bool same(bf16 a, bf16 b) {
  return a.bits == b.bits || (std::isnan(to_float(a)) && std::isnan(to_float(b)));
}

// Number of elements that differ (see the file comment for NaN); the first one is reported.
template <typename T>
int64_t differences(const std::vector<T>& got, const std::vector<T>& want) {
  REQUIRE(got.size() == want.size());
  int64_t count = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!same(got[i], want[i])) {
      if (count == 0) {
        if constexpr (std::is_same_v<T, float>) {
          UNSCOPED_INFO("first difference at " << i << ": got 0x" << std::hex << float_bits(got[i])
                                               << ", want 0x" << float_bits(want[i]));
        } else {
          UNSCOPED_INFO("first difference at " << i << ": got 0x" << std::hex << got[i].bits
                                               << ", want 0x" << want[i].bits);
        }
      }
      ++count;
    }
  }
  return count;
}

// Every array a kernel reads or writes, filled from one seed.
struct State {
  State(int64_t n, int64_t offset)
      : g(mixed_f32(n, 1), offset),
        x(mixed_f32(n, 2), offset),
        w(mixed_f32(n, 3), offset),
        m(mixed_f32(n, 4), offset),
        v(mixed_f32(n, 5, true), offset),
        a(std::vector<float>(n), offset),
        mb(mixed_bf16(n, 6), offset),
        u(mixed_bf16(n, 7), offset),
        y(std::vector<bf16>(n), offset) {}
  Array<float> g, x, w, m, v, a;
  Array<bf16> mb, u, y;
};

// One kernel on a State, vector or scalar form.
using Kernel = std::function<void(bool vector, int64_t n, State&)>;

struct NamedKernel {
  std::string name;
  Kernel run;
};

std::vector<NamedKernel> kernels() {
  return {
      {"fold_momentum_f32 mu 0.9",
       [](bool vec, int64_t n, State& s) {
         (vec ? host::fold_momentum_f32 : host::scalar::fold_momentum_f32)(n, 0.9f, 1.0f,
                                                                           s.g.data(), s.m.data());
       }},
      {"fold_momentum_f32 scaled",
       [](bool vec, int64_t n, State& s) {
         (vec ? host::fold_momentum_f32 : host::scalar::fold_momentum_f32)(n, 0.95f, 1.0f / 3.0f,
                                                                           s.g.data(), s.m.data());
       }},
      {"fold_momentum_bf16 mu 0.9",
       [](bool vec, int64_t n, State& s) {
         (vec ? host::fold_momentum_bf16 : host::scalar::fold_momentum_bf16)(
             n, 0.9f, 1.0f, s.g.data(), s.mb.data());
       }},
      {"fold_momentum_bf16 mu 1 (exact sums: ties)",
       [](bool vec, int64_t n, State& s) {
         (vec ? host::fold_momentum_bf16 : host::scalar::fold_momentum_bf16)(
             n, 1.0f, 0.5f, s.g.data(), s.mb.data());
       }},
      {"add_update_bf16",
       [](bool vec, int64_t n, State& s) {
         (vec ? host::add_update_bf16 : host::scalar::add_update_bf16)(n, 0.999f, s.u.data(),
                                                                       s.w.data());
       }},
      {"adamw step 1",
       [](bool vec, int64_t n, State& s) {
         (vec ? host::adamw : host::scalar::adamw)(n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1,
                                                   s.g.data(), s.w.data(), s.m.data(), s.v.data());
       }},
      {"adamw step 1000",
       [](bool vec, int64_t n, State& s) {
         (vec ? host::adamw : host::scalar::adamw)(n, 3e-4f, 0.9f, 0.999f, 1e-6f, 0.0f, 1000,
                                                   s.g.data(), s.w.data(), s.m.data(), s.v.data());
       }},
      {"cast_to_bf16",
       [](bool vec, int64_t n, State& s) {
         (vec ? host::cast_to_bf16 : host::scalar::cast_to_bf16)(n, s.x.data(), s.y.data());
       }},
      {"triad",
       [](bool vec, int64_t n, State& s) {
         (vec ? host::triad : host::scalar::triad)(n, 3.0f, s.x.data(), s.g.data(), s.a.data());
       }},
  };
}

// Every array of the State after a run: outputs and in-place arrays, inputs unchanged.
struct Snapshot {
  std::vector<float> g, x, w, m, v, a;
  std::vector<bf16> mb, u, y;
};
Snapshot snapshot(const State& s) {
  return {s.g.values(), s.x.values(),  s.w.values(), s.m.values(), s.v.values(),
          s.a.values(), s.mb.values(), s.u.values(), s.y.values()};
}

int64_t differences(const Snapshot& got, const Snapshot& want) {
  return differences(got.g, want.g) + differences(got.x, want.x) + differences(got.w, want.w) +
         differences(got.m, want.m) + differences(got.v, want.v) + differences(got.a, want.a) +
         differences(got.mb, want.mb) + differences(got.u, want.u) + differences(got.y, want.y);
}

bool identical(const Snapshot& a, const Snapshot& b) {
  const auto eq = [](const auto& x, const auto& y) {
    return x.size() == y.size() &&
           (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(x[0])) == 0);
  };
  return eq(a.g, b.g) && eq(a.x, b.x) && eq(a.w, b.w) && eq(a.m, b.m) && eq(a.v, b.v) &&
         eq(a.a, b.a) && eq(a.mb, b.mb) && eq(a.u, b.u) && eq(a.y, b.y);
}

}  // namespace

TEST_CASE("host kernels equal their scalar loops bit for bit, on 1 and 2 threads", "[exec][host]") {
  const int threads = omp_get_max_threads();
  for (int64_t n : kSizes) {
    for (int64_t offset : {0, 1}) {
      const State start(n, offset);
      for (const NamedKernel& k : kernels()) {
        INFO(k.name << ", n " << n << ", offset " << offset);
        State reference = start;
        k.run(false, n, reference);
        const Snapshot want = snapshot(reference);
        std::vector<Snapshot> runs;
        for (int t : {1, 2}) {
          omp_set_num_threads(t);
          State s = start;
          k.run(true, n, s);
          runs.push_back(snapshot(s));
          INFO(t << " thread(s)");
          CHECK(differences(runs.back(), want) == 0);
        }
        // The same code per element whatever the thread count: identical bits, NaNs included.
        CHECK(identical(runs[0], runs[1]));
      }
    }
  }
  omp_set_num_threads(threads);
}

TEST_CASE("host kernels compute the Backend's formulas", "[exec][host]") {
  std::unique_ptr<Backend> backend = make_cpu_backend();
  const int64_t n = 100003;
  const State s(n, 0);
  const std::vector<float> g = s.g.values(), w = s.w.values(), m = s.m.values(), v = s.v.values(),
                           x = s.x.values();
  const std::vector<bf16> mb = s.mb.values(), u = s.u.values();

  SECTION("fold_momentum_f32, scale 1, is momentum_f32's m (nesterov off)") {
    Buffer<float> bg(*backend, g), bm(*backend, m);
    Buffer<bf16> bu(*backend, n);
    backend->momentum_f32(n, 0.9f, false, bg.data(), bm.data(), bu.data());
    std::vector<float> got = m;
    host::fold_momentum_f32(n, 0.9f, 1.0f, g.data(), got.data());
    CHECK(differences(got, bm.host()) == 0);
  }
  SECTION("fold_momentum_bf16, scale 1, is momentum_bf16's m (nesterov off)") {
    Buffer<float> bg(*backend, g);
    Buffer<bf16> bm(*backend, mb), bu(*backend, n);
    backend->momentum_bf16(n, 0.9f, false, bg.data(), bm.data(), bu.data());
    std::vector<bf16> got = mb;
    host::fold_momentum_bf16(n, 0.9f, 1.0f, g.data(), got.data());
    CHECK(differences(got, bm.host()) == 0);
  }
  SECTION("fold_momentum_f32 with a scale is mu * m + scale * g") {
    std::vector<float> got = m, want(n);
    host::fold_momentum_f32(n, 0.95f, 0.25f, g.data(), got.data());
    for (int64_t i = 0; i < n; ++i) {
      const float decayed = 0.95f * m[i], scaled = 0.25f * g[i];
      want[i] = decayed + scaled;
    }
    CHECK(differences(got, want) == 0);
  }
  SECTION("add_update_bf16 is w * decay + float(u), and apply_update with s = -1") {
    std::vector<float> got = w, want(n);
    host::add_update_bf16(n, 0.999f, u.data(), got.data());
    for (int64_t i = 0; i < n; ++i) {
      const float decayed = w[i] * 0.999f;
      want[i] = decayed + to_float(u[i]);
    }
    CHECK(differences(got, want) == 0);
    Buffer<float> bw(*backend, w);
    Buffer<bf16> bu(*backend, u);
    backend->apply_update(n, 0.999f, -1.0f, bu.data(), bw.data());
    CHECK(differences(got, bw.host()) == 0);
  }
  SECTION("adamw is Backend::adamw") {
    for (int64_t step : {1, 7, 5000}) {
      INFO("step " << step);
      Buffer<float> bg(*backend, g), bw(*backend, w), bm(*backend, m), bv(*backend, v);
      backend->adamw(n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, step, bg.data(), bw.data(), bm.data(),
                     bv.data());
      std::vector<float> gw = w, gm = m, gv = v;
      host::adamw(n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, step, g.data(), gw.data(), gm.data(),
                  gv.data());
      CHECK(differences(gw, bw.host()) == 0);
      CHECK(differences(gm, bm.host()) == 0);
      CHECK(differences(gv, bv.host()) == 0);
    }
    std::vector<float> gw = w, gm = m, gv = v;
    CHECK_THROWS_AS(host::adamw(n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0, g.data(), gw.data(),
                                gm.data(), gv.data()),
                    std::invalid_argument);
    CHECK_THROWS_AS(host::scalar::adamw(n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0, g.data(), gw.data(),
                                        gm.data(), gv.data()),
                    std::invalid_argument);
  }
  SECTION("cast_to_bf16 is to_bf16 and Backend::cast_to_bf16, NaN payloads included") {
    std::vector<bf16> got(n), want(n);
    host::cast_to_bf16(n, x.data(), got.data());
    for (int64_t i = 0; i < n; ++i) want[i] = to_bf16(x[i]);
    CHECK(same_bits(got, want));
    Buffer<float> bx(*backend, x);
    Buffer<bf16> by(*backend, n);
    backend->cast_to_bf16(n, bx.data(), by.data());
    CHECK(same_bits(got, by.host()));
  }
}
