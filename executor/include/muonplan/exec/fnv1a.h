// FNV-1a, 64 bits (Fowler, Noll, Vo; the parameters of the IETF draft "The FNV Non-Cryptographic
// Hash Algorithm"): the checkpoint checksum, the state digest's and the initializer's name keys,
// and the plan fingerprint. One definition, so every reader written from the docs agrees.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace muonplan::exec {

inline constexpr uint64_t kFnv1a64Basis = 14695981039346656037ull;
inline constexpr uint64_t kFnv1a64Prime = 1099511628211ull;

// Continues the hash h over n bytes (start with kFnv1a64Basis).
inline uint64_t fnv1a64(const void* data, size_t n, uint64_t h = kFnv1a64Basis) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * kFnv1a64Prime;
  return h;
}

inline uint64_t fnv1a64(std::string_view s, uint64_t h = kFnv1a64Basis) {
  return fnv1a64(s.data(), s.size(), h);
}

}  // namespace muonplan::exec
