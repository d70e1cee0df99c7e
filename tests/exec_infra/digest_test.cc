// The state digest: partial digests of slices add up to the whole's; any flipped bit shows.
#include <catch2/catch.hpp>
#include <vector>

#include "muonplan/exec/bf16.h"
#include "muonplan/exec/digest.h"
#include "muonplan/exec/init.h"

using namespace muonplan::exec;

TEST_CASE("digest: split over ranks adds up to the whole", "[exec-infra]") {
  std::vector<float> w(777);
  fill_param("w", 0, w.size(), w.data());
  const uint64_t whole = digest_bytes("w/param", 0, w.data(), 4, w.size());
  // Uneven slices in any order, one empty: as ranks digest their shards.
  const uint64_t parts = digest_bytes("w/param", 500, w.data() + 500, 4, 277) +
                         digest_bytes("w/param", 0, w.data(), 4, 260) +
                         digest_bytes("w/param", 260, w.data() + 260, 4, 0) +
                         digest_bytes("w/param", 260, w.data() + 260, 4, 240);
  CHECK(parts == whole);
  CHECK(digest_hex(0x0123456789abcdefull) == "0123456789abcdef");
}

TEST_CASE("digest: one flipped bit, a name, an offset or a dtype changes it", "[exec-infra]") {
  std::vector<float> w(64);
  fill_param("w", 0, w.size(), w.data());
  const uint64_t base = digest_bytes("w/param", 0, w.data(), 4, w.size());
  std::vector<float> flipped = w;
  reinterpret_cast<uint32_t*>(flipped.data())[17] ^= 1u << 9;
  CHECK(digest_bytes("w/param", 0, flipped.data(), 4, w.size()) != base);
  CHECK(digest_bytes("w/momentum", 0, w.data(), 4, w.size()) != base);
  CHECK(digest_bytes("w/param", 1, w.data(), 4, w.size()) != base);
  // Swapping two elements moves values to other indices: a different digest.
  std::vector<float> swapped = w;
  std::swap(swapped[3], swapped[4]);
  CHECK(digest_bytes("w/param", 0, swapped.data(), 4, w.size()) != base);
  // The same bits read as bf16 pairs are a different array.
  CHECK(digest_bytes("w/param", 0, w.data(), 2, 2 * w.size()) != base);
  std::vector<bf16> h(8, to_bf16(1.0f));
  const uint64_t hb = digest_bytes("m", 0, h.data(), 2, h.size());
  h[5].bits ^= 1;
  CHECK(digest_bytes("m", 0, h.data(), 2, h.size()) != hb);
}
