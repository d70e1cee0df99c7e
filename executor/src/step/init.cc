#include "muonplan/exec/init.h"
#include "muonplan/exec/fnv1a.h"

#include <cmath>

namespace muonplan::exec {
namespace {

// splitmix64's output function: a bijective 64-bit mix with full avalanche.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ull;  // splitmix64's increment

uint64_t name_key(const std::string& name, uint64_t stream) {
  const uint64_t h = fnv1a64(name);
  return mix64(h ^ mix64(stream));
}

// Element i of the stream `key`: splitmix64 at counter i, uniform on (-half_width, half_width),
// 24 random bits (a float's mantissa), symmetric about zero.
void fill_uniform(uint64_t key, int64_t first, int64_t count, double half_width, double center,
                  float* out) {
  for (int64_t k = 0; k < count; ++k) {
    const uint64_t x = mix64(key + uint64_t(first + k + 1) * kGamma);
    const double u = (double(x >> 40) + 0.5) * 0x1p-24;  // (0, 1)
    out[k] = static_cast<float>(center + half_width * (2.0 * u - 1.0));
  }
}

const double kSqrt3 = std::sqrt(3.0);  // uniform on [-a, a] has std a / sqrt(3)

}  // namespace

void fill_param(const std::string& name, int64_t global_offset, int64_t count, float* out) {
  const double center = name.find("norm") != std::string::npos ? 1.0 : 0.0;
  fill_uniform(name_key(name, 1), global_offset, count, 0.02 * kSqrt3, center, out);
}

void fill_grad(const std::string& name, int64_t step, int64_t global_offset, int64_t count,
               float* out) {
  // Stream 2 + step: a fresh draw per step, unrelated to the parameters' stream 1 (step >= 0).
  fill_uniform(name_key(name, 2 + uint64_t(step)), global_offset, count, 1e-3 * kSqrt3, 0.0, out);
}

}  // namespace muonplan::exec
