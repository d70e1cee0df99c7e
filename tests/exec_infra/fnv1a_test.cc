// FNV-1a 64 against the published test vectors (the FNV reference code's test suite), so a
// reader written from docs/checkpoint-format.md agrees with our checksums.
#include "muonplan/exec/fnv1a.h"

#include <catch2/catch.hpp>
#include <string>

#include "muonplan/exec/digest.h"

using namespace muonplan::exec;

TEST_CASE("fnv1a64 matches the published vectors", "[exec-infra]") {
  CHECK(kFnv1a64Basis == 14695981039346656037ull);
  CHECK(digest_hex(fnv1a64("")) == "cbf29ce484222325");
  CHECK(digest_hex(fnv1a64("a")) == "af63dc4c8601ec8c");
  CHECK(digest_hex(fnv1a64("foobar")) == "85944171f73967e8");
}

TEST_CASE("fnv1a64 continues over pieces as over the whole", "[exec-infra]") {
  const std::string s = "model.layers.0.mlp.down_proj.weight/momentum";
  const uint64_t whole = fnv1a64(s);
  const uint64_t pieces = fnv1a64(s.data() + 10, s.size() - 10, fnv1a64(s.data(), 10));
  CHECK(pieces == whole);
}
