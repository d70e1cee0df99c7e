// Fuzzes our YAML model-spec loader (parse_model_yaml). InputError is the documented rejection;
// anything else (a crash, a sanitizer report, another exception type) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_model.h"
#include "muonplan/base/error.h"
#include "muonplan/planner/model_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    muonplan::fuzz::exercise_model(muonplan::parse_model_yaml(text, "fuzz.yaml"));
  } catch (const muonplan::InputError&) {
  }
  return 0;
}
