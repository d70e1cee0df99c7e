// Fuzzes the plan loader (plan_from_json) with the bytes parsed as JSON first; input that is
// not JSON is an expected rejection, as is InputError. Anything else (a crash, a sanitizer
// report, another exception type, nlohmann's type_error included) is a finding.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>

#include "muonplan/base/error.h"
#include "muonplan/planner/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return 0;
  try {
    muonplan::plan_from_json(j, "fuzz.json");
  } catch (const muonplan::InputError&) {
  }
  return 0;
}
