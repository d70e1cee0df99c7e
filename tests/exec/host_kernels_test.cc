// Host kernels (host_kernels.h): each vector + OpenMP kernel (the form host::active_isa() runs;
// ctest's exec.host_isa_* run this file under each form the CPU has) equals its plain scalar loop
// bit for bit on awkward sizes and values (denormals, NaN, Inf, -0, bf16 ties), on 1 and 2 threads
// and on aligned (streaming stores) and misaligned arrays; and they compute the Backend's formulas.
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
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
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

bool is_denormal(float x) {
  return (float_bits(x) & 0x7f800000u) == 0 && (float_bits(x) & 0x007fffffu) != 0;
}

// Whether the arrays hold denormals. Nearly every vector of the mixed arrays has one, and a
// vector with a denormal takes the integer rounding on every form; without them, the
// avx512_bf16 form rounds with vcvtneps2bf16 (host_kernels_avx512.cc), so both are tested.
bool g_denormals = true;

// n fp32 values: one in eight a special pattern, the rest N(0, 1) times a scale from 1e-39
// (denormal) to 1e30; `positive` takes absolute values of the random ones (AdamW's v). Without
// g_denormals, a denormal becomes 1.
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
    if (!g_denormals && is_denormal(x)) x = 1.0f;
  }
  return v;
}

std::vector<bf16> mixed_bf16(int64_t n, uint32_t seed) {
  std::vector<float> f = mixed_f32(n, seed);
  std::mt19937 rng(seed + 1);
  std::vector<bf16> v(n);
  for (int64_t i = 0; i < n; ++i) {
    v[i] = rng() % 8 == 0 ? bf16{kSpecialBf16[rng() % std::size(kSpecialBf16)]} : to_bf16(f[i]);
    if (!g_denormals && is_denormal(to_float(v[i]))) v[i] = to_bf16(1.0f);
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
  // Copies without allocating (the large sizes would otherwise spend their time in page faults).
  void restore(const Array& from) { std::copy(from.data(), from.data() + n_, data()); }
  void values_into(std::vector<T>& out) const { out.assign(data(), data() + n_); }

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
  void restore(const State& from) {
    for (auto [to, src] : {std::pair{&g, &from.g},
                           {&x, &from.x},
                           {&w, &from.w},
                           {&m, &from.m},
                           {&v, &from.v},
                           {&a, &from.a}}) {
      to->restore(*src);
    }
    mb.restore(from.mb);
    u.restore(from.u);
    y.restore(from.y);
  }
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
void snapshot(const State& s, Snapshot& out) {
  s.g.values_into(out.g);
  s.x.values_into(out.x);
  s.w.values_into(out.w);
  s.m.values_into(out.m);
  s.v.values_into(out.v);
  s.a.values_into(out.a);
  s.mb.values_into(out.mb);
  s.u.values_into(out.u);
  s.y.values_into(out.y);
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

// Each kernel against its scalar loop on every size, aligned and not, on 1 and 2 threads, in
// each of `forms` (those the CPU lacks are left out).
void check_against_scalar(const std::vector<int64_t>& sizes, const std::vector<host::Isa>& forms) {
  const int threads = omp_get_max_threads();
  const host::Isa active = host::active_isa();
  for (int64_t n : sizes) {
    for (int64_t offset : {0, 1}) {
      const State start(n, offset);
      State s = start;
      Snapshot want;
      std::vector<Snapshot> runs(2);
      for (const NamedKernel& k : kernels()) {
        k.run(false, n, s);
        snapshot(s, want);
        for (host::Isa isa : forms) {
          if (!host::isa_supported(isa)) continue;
          host::set_active_isa(isa);
          INFO(k.name << ", n " << n << ", offset " << offset << ", denormals " << g_denormals
                      << ", form " << host::isa_name(isa));
          for (int t : {1, 2}) {
            omp_set_num_threads(t);
            s.restore(start);
            k.run(true, n, s);
            snapshot(s, runs[t - 1]);
            INFO(t << " thread(s)");
            CHECK(differences(runs[t - 1], want) == 0);
          }
          // The same code per element whatever the thread count: identical bits, NaNs included.
          CHECK(identical(runs[0], runs[1]));
        }
        s.restore(start);
      }
    }
  }
  host::set_active_isa(active);
  omp_set_num_threads(threads);
}

const std::vector<host::Isa> kAllForms = {host::Isa::avx2, host::Isa::avx512,
                                          host::Isa::avx512_bf16};

}  // namespace

TEST_CASE("host kernels equal their scalar loops bit for bit, on 1 and 2 threads", "[exec][host]") {
  // Every form the CPU has, against one scalar run each.
  for (host::Isa isa : kAllForms) {
    if (!host::isa_supported(isa))
      WARN("not tested here, the CPU lacks it: " << host::isa_name(isa));
  }
  // The widest form (what the CPU runs) on every size; the narrower ones on fewer and smaller
  // sizes that still cover the tails, several threads' blocks and the streaming stores (the
  // kernels' inputs are full of denormals, slow on x86, so the sizes set the test's time).
  const std::vector<int64_t> narrower = {0, 1, 7, 33, 100003, (int64_t{1} << 20) + 5};
  g_denormals = true;
  check_against_scalar(kSizes, {host::active_isa()});
  std::vector<host::Isa> others;
  for (host::Isa isa : kAllForms) {
    if (isa != host::active_isa()) others.push_back(isa);
  }
  check_against_scalar(narrower, others);
  // The hardware bf16 rounding's own path: vectors without denormals.
  g_denormals = false;
  check_against_scalar({33, 100003, (int64_t{1} << 20) + 5}, kAllForms);
  g_denormals = true;
}

TEST_CASE("host kernels run the form MUONPLAN_HOST_ISA names, else the widest",
          "[exec][host][isa]") {
  // ctest's exec.host_isa_<form> runs this (and the next) under each form the CPU has, skipped
  // (77) elsewhere: the form is the one asked for, and small cases of every kernel equal the
  // scalar loops on it (the full sizes run above, for every form, in one process).
  const char* env = std::getenv("MUONPLAN_HOST_ISA");
  if (env != nullptr && *env != '\0') {
    CHECK(std::string(host::isa_name(host::active_isa())) == env);
  } else {
    CHECK(host::isa_supported(host::active_isa()));
    for (host::Isa wider : {host::Isa::avx512, host::Isa::avx512_bf16}) {
      if (host::isa_supported(wider)) CHECK(host::active_isa() >= wider);
    }
  }
  CHECK(host::isa_supported(host::Isa::avx2));  // the CPU backend's minimum
  CHECK_THROWS_AS(host::set_active_isa(static_cast<host::Isa>(99)), std::invalid_argument);
  check_against_scalar({0, 1, 7, 33, 40000}, {host::active_isa()});
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
