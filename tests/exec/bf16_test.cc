// bf16 rounding: to_bf16 against hand-checked bits and an independent nearest-even rule, and
// the CPU backend's vectorized casts against to_bf16.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "exec_test_util.h"
#include "muonplan/exec/backend.h"
#include "muonplan/exec/bf16.h"

using namespace muonplan::exec;
using namespace muonplan::exec::test;

namespace {

// Nearest bf16 by distance in double, ties to the even mantissa; overflow past the midpoint
// between the largest bf16 and 2^128 goes to infinity (IEEE's unbounded-exponent rule).
uint16_t nearest_even_reference(float f) {
  const uint32_t u = float_bits(f);
  const uint32_t lo_bits = u & 0xffff0000u;
  const double lo = bits_float(lo_bits);
  const uint32_t hi_bits = lo_bits + 0x10000u;
  const double hi = (hi_bits & 0x7fffffffu) == 0x7f800000u ? std::copysign(std::ldexp(1.0, 128), f)
                                                           : bits_float(hi_bits);
  const double d_lo = std::fabs(f - lo), d_hi = std::fabs(hi - f);
  if (d_lo < d_hi) return static_cast<uint16_t>(lo_bits >> 16);
  if (d_hi < d_lo) return static_cast<uint16_t>(hi_bits >> 16);
  return static_cast<uint16_t>(((lo_bits >> 16) & 1u) ? hi_bits >> 16 : lo_bits >> 16);
}

}  // namespace

TEST_CASE("to_bf16 rounds to nearest even: hand-checked values", "[exec][bf16]") {
  const std::pair<uint32_t, uint16_t> table[] = {
      {0x3f800000u, 0x3f80},  // 1.0
      {0x3f808000u, 0x3f80},  // 1 + 2^-8: tie, 0x3f80 is even
      {0x3f818000u, 0x3f82},  // 1 + 3 * 2^-8: tie, up to the even 0x3f82
      {0x3f808001u, 0x3f81},  // just above the tie
      {0x3f807fffu, 0x3f80},  // just below the tie
      {0xbf808000u, 0xbf80},  // -(1 + 2^-8): ties to even by magnitude
      {0xbf818000u, 0xbf82},
      {0x40490fdbu, 0x4049},  // pi -> 3.140625
      {0x3dcccccdu, 0x3dcd},  // 0.1f -> 0.10009765625
      {0x00000000u, 0x0000},  // +0
      {0x80000000u, 0x8000},  // -0
      {0x7f800000u, 0x7f80},  // +inf
      {0xff800000u, 0xff80},  // -inf
      {0x7f7fffffu, 0x7f80},  // FLT_MAX rounds up to inf
      {0x7f7f7fffu, 0x7f7f},  // largest value that stays finite
      {0x7f7f8000u, 0x7f80},  // tie at the top: 0x7f7f is odd, so inf
      {0x7f7e8000u, 0x7f7e},  // tie, 0x7f7e even
      {0x00000001u, 0x0000},  // smallest fp32 subnormal
      {0x00008000u, 0x0000},  // subnormal tie, to even 0
      {0x00018000u, 0x0002},  // subnormal tie, to even 2
      {0x00010000u, 0x0001},  // smallest bf16 subnormal, exact
      {0x007fffffu, 0x0080},  // largest fp32 subnormal rounds up to the smallest normal
      {0x807fffffu, 0x8080},
      {0x7fc00000u, 0x7fc0},  // quiet NaN
      {0x7f800001u, 0x7fc0},  // signalling NaN with a low payload stays NaN (quieted)
      {0xff800001u, 0xffc0},
      {0x7fffffffu, 0x7fff},  // NaN that rounding would carry into the sign bit
  };
  for (auto [in, out] : table) {
    INFO("input 0x" << std::hex << in);
    CHECK(to_bf16(bits_float(in)).bits == out);
  }
  CHECK(to_float(bf16{0x4049}) == 3.140625f);
  CHECK(std::isnan(to_float(to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST_CASE("to_bf16 matches an independent nearest-even rule, and bf16 -> fp32 -> bf16 is exact",
          "[exec][bf16]") {
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t u = rng();
    if ((u & 0x7f800000u) == 0x7f800000u) continue;  // inf and NaN: the table covers them
    INFO("input 0x" << std::hex << u);
    REQUIRE(to_bf16(bits_float(u)).bits == nearest_even_reference(bits_float(u)));
  }
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const bf16 v{static_cast<uint16_t>(b)};
    if (std::isnan(to_float(v))) continue;
    REQUIRE(to_bf16(to_float(v)).bits == b);
  }
}

TEST_CASE("cpu backend casts agree with to_bf16 bit for bit", "[exec][bf16]") {
  auto backend = make_cpu_backend();
  std::mt19937 rng(11);
  const int64_t n = 300007;  // not a multiple of 8: the scalar tail runs too
  std::vector<float> x(n);
  for (float& f : x) f = bits_float(rng());
  const float specials[] = {0.0f,
                            -0.0f,
                            INFINITY,
                            -INFINITY,
                            NAN,
                            bits_float(0x7f800001u),
                            bits_float(0x7f7f8000u),
                            bits_float(0x00018000u),
                            1.00390625f};
  for (size_t i = 0; i < std::size(specials); ++i) x[i * 8 + 3] = specials[i];
  Buffer<float> xf(*backend, x);
  Buffer<bf16> y(*backend, n);
  Buffer<float> back(*backend, n);
  backend->cast_to_bf16(n, xf.data(), y.data());
  backend->cast_to_f32(n, y.data(), back.data());
  const std::vector<bf16> yh = y.host();
  const std::vector<float> bh = back.host();
  for (int64_t i = 0; i < n; ++i) {
    INFO("element " << i << " input 0x" << std::hex << float_bits(x[i]));
    REQUIRE(yh[i].bits == to_bf16(x[i]).bits);
    REQUIRE(float_bits(bh[i]) == float_bits(to_float(yh[i])));
  }
}
