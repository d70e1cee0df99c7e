// bfloat16 storage and exact round-to-nearest-even conversion. The CPU backend stores every
// bf16 value this way, so its results are the bit-exact oracle for the other backends.
#pragma once

#include <cstdint>
#include <cstring>

namespace muonplan::exec {

struct bf16 {
  uint16_t bits = 0;
};

inline float to_float(bf16 v) {
  const uint32_t u = static_cast<uint32_t>(v.bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Round to nearest, ties to even; NaN stays NaN (quiet).
inline bf16 to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0) {
    return bf16{static_cast<uint16_t>((u >> 16) | 0x0040u)};
  }
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return bf16{static_cast<uint16_t>((u + rounding) >> 16)};
}

inline float round_bf16(float f) {
  return to_float(to_bf16(f));
}

}  // namespace muonplan::exec
