#include "muonplan/exec/digest.h"
#include "muonplan/exec/fnv1a.h"

#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace muonplan::exec {
namespace {

uint64_t mix64(uint64_t z) {  // splitmix64's output function
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t name_hash(const std::string& name) {
  const uint64_t h = fnv1a64(name);
  return mix64(h);
}

}  // namespace

uint64_t digest_bytes(const std::string& name, int64_t global_offset, const void* data,
                      size_t elem_bytes, int64_t elems) {
  if (elem_bytes == 0 || elem_bytes > 8)
    throw std::invalid_argument("digest_bytes: element size must be 1 to 8 bytes");
  // The element size is mixed in so an fp32 array and a bf16 one never digest alike.
  const uint64_t key = name_hash(name) ^ mix64(elem_bytes);
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t sum = 0;
  for (int64_t k = 0; k < elems; ++k) {
    uint64_t bits = 0;
    std::memcpy(&bits, p + k * elem_bytes, elem_bytes);
    // Index and bits go through separate mixing rounds: a flipped bit changes the whole term.
    const uint64_t at = mix64(key + uint64_t(global_offset + k) * 0x9e3779b97f4a7c15ull);
    sum += mix64(at ^ (bits * 0xd6e8feb86659fd93ull + 0x632be59bd9b4e019ull));
  }
  return sum;
}

std::string digest_hex(uint64_t digest) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(digest));
  return buf;
}

}  // namespace muonplan::exec
