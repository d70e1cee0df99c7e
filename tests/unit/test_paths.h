// Paths of the repository's bundled inputs, for tests.
#pragma once
#include <string>

inline std::string repo_path(const std::string& relative) {
  return std::string(MUONPLAN_SOURCE_DIR) + "/" + relative;
}
