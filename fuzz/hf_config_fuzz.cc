// Fuzzes the Hugging Face config.json importer (parse_hf_config). InputError is the documented
// rejection; anything else (a crash, a sanitizer report, another exception type) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_model.h"
#include "muonplan/base/error.h"
#include "muonplan/planner/model_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    // The file name becomes the model name; "config.json" takes the _name_or_path branch.
    muonplan::fuzz::exercise_model(muonplan::parse_hf_config(text, "config.json"));
  } catch (const muonplan::InputError&) {
  }
  return 0;
}
