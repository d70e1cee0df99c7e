// Paths of the repository's bundled inputs, and small helpers shared by the unit tests.
#pragma once
#include <functional>
#include <string>

#include "muonplan/error.h"

inline std::string repo_path(const std::string& relative) {
  return std::string(MUONPLAN_SOURCE_DIR) + "/" + relative;
}

namespace muonplan::test {

// The message of the InputError that f throws, or `none` when it throws nothing.
inline std::string error_of(const std::function<void()>& f, const std::string& none = "") {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return none;
}

}  // namespace muonplan::test
