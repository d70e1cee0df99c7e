// An order-independent 64-bit digest of named arrays, indexed by global element index:
//   digest = sum over elements of mix(hash(name), global index, element bits, element size)
// modulo 2^64. Each rank digests the slices it holds, and the partial digests add
// (Communicator::allreduce_sum_u64) to the digest one rank computes over whole tensors, so a
// run's state digest is the same on any world size and any sharding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace muonplan::exec {

// Partial digest of `elems` elements of `elem_bytes` bytes each (1 to 8: 4 for fp32, 2 for
// bf16), the first being element `global_offset` of array `name`. Sum the results.
uint64_t digest_bytes(const std::string& name, int64_t global_offset, const void* data,
                      size_t elem_bytes, int64_t elems);

// 16 lowercase hex digits.
std::string digest_hex(uint64_t digest);

}  // namespace muonplan::exec
