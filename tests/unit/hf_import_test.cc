#include <catch2/catch.hpp>

#include "muonplan/base/error.h"
#include "muonplan/planner/inventory.h"
#include "muonplan/planner/model_io.h"
#include "test_paths.h"

using namespace muonplan;

namespace {
int64_t total(const std::string& hf_name) {
  return build_inventory(import_hf_config(repo_path("tests/data/hf/" + hf_name + ".json")))
      .summarize()
      .params_total;
}
}  // namespace

TEST_CASE("HF import gives the exact published parameter totals") {
  CHECK(total("qwen3-30b-a3b") == 30'532'122'624);
  CHECK(total("glm-4.5-air") == 106'852'251'264);
  CHECK(total("qwen3-0.6b") == 596'049'920);
  CHECK(total("llama-3.1-8b") == 8'030'261'248);
  CHECK(total("llama-3.1-70b") == 70'553'706'496);
}

TEST_CASE("HF import of the large MoE models is within 0.5% of their stated sizes") {
  CHECK(total("deepseek-v3") == Approx(671.0e9).epsilon(0.005));
  CHECK(total("kimi-k2") == Approx(1.026e12).epsilon(0.005));
  CHECK(total("qwen3-235b-a22b") == Approx(235.1e9).epsilon(0.005));
  CHECK(total("glm-4.5") == Approx(352.8e9).epsilon(0.005));
  CHECK(total("glm-5") == Approx(743.9e9).epsilon(0.005));
}

TEST_CASE("GLM-4.5-Air's MTP layer is counted apart from the main model") {
  const ParamInventory inv =
      build_inventory(import_hf_config(repo_path("tests/data/hf/glm-4.5-air.json")));
  CHECK(inv.mtp_params() == Approx(2.375e9).epsilon(0.001));
  CHECK(inv.summarize(true).params_total == inv.summarize(false).params_total + inv.mtp_params());
}

TEST_CASE("a number too large for a double is a located JSON error, not a crash", "[hf_import]") {
  // nlohmann throws out_of_range (406) for it, not parse_error.
  CHECK_THROWS_WITH(parse_hf_config("{\"model_type\": \"llama\", \"vocab_size\": 1e400}", "c.json"),
                    "c.json: json: number overflow parsing '1e400'");
}

TEST_CASE("integers past INT64_MAX are refused as written, not wrapped negative", "[hf_import]") {
  // nlohmann holds them unsigned; get<int64_t> made 2^64-1 read as -1 ("must be positive").
  CHECK_THROWS_WITH(
      parse_hf_config("{\"model_type\": \"llama\", \"vocab_size\": 18446744073709551615}",
                      "c.json"),
      "c.json:1:25: vocab_size: is 18446744073709551615, more than muonplan plans for (100000000)");
}
