// Paths of the repository's bundled inputs, and small helpers shared by the unit tests.
#pragma once
#include <cstdio>
#include <fstream>
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

// A file for the loaders that take a path, in the working directory; removed with the object.
struct TempFile {
  std::string path;
  TempFile(const std::string& name, const std::string& text) : path(name) {
    std::ofstream(path, std::ios::binary) << text;
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() { std::remove(path.c_str()); }
};

}  // namespace muonplan::test
