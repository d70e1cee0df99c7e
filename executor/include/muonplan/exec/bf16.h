// bfloat16 storage and exact round-to-nearest-even conversion. The CPU backend stores every
// bf16 value this way, so its results are the bit-exact oracle for the other backends. The CUDA
// kernels include this header too (nvcc, C++17): what they call is marked MUONPLAN_HD.
#pragma once

#include <cstdint>
#include <cstring>

// Functions that also run in CUDA kernels: __host__ __device__ under nvcc, plain inline C++
// everywhere else.
#if defined(__CUDACC__)
#define MUONPLAN_HD __host__ __device__
#else
#define MUONPLAN_HD
#endif

namespace muonplan::exec {

struct bf16 {
  uint16_t bits = 0;
};

// An fp32 value's bits and back (memcpy: the defined way to reinterpret; nvcc accepts it in
// device code and compiles it to a register move).
MUONPLAN_HD inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
MUONPLAN_HD inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

MUONPLAN_HD inline float to_float(bf16 v) {
  return bits_float(static_cast<uint32_t>(v.bits) << 16);
}

// Round to nearest, ties to even, on the fp32 bit pattern; a NaN stays a NaN (sign and top
// payload bits kept, quiet bit 0x0040 set). Written without a branch, so that loops over it
// vectorize; the AVX2 casts (cpu_kernels.cc, cpu_host_kernels.cc) are this rule on 8 lanes.
MUONPLAN_HD inline bf16 to_bf16(float f) {
  const uint32_t u = float_bits(f);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (u >> 16) | 0x0040u;
  return bf16{static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded)};
}

MUONPLAN_HD inline float round_bf16(float f) {
  return to_float(to_bf16(f));
}

}  // namespace muonplan::exec
