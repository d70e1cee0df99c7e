// Paths of the repository's bundled inputs, and small helpers shared by the unit tests.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>

#include "muonplan/base/error.h"

// MUONPLAN_SOURCE_DIR in the environment overrides the compiled-in checkout: the GPU check runs
// test binaries built in another folder (bench/gpu_bundle.sh) on another machine's copy.
inline std::string repo_path(const std::string& relative) {
  const char* env = std::getenv("MUONPLAN_SOURCE_DIR");
  return std::string(env != nullptr && *env != 0 ? env : MUONPLAN_SOURCE_DIR) + "/" + relative;
}

namespace muonplan::test {

inline constexpr int64_t KiB = 1024, MiB = 1024 * 1024;

// MUONPLAN_TEST_QUICK=1 (scripts/sanitize.sh; tests/lib/common.sh reads it for the scripts): a
// test runs a representative subset of its cases, each code path once; the plain run, all.
inline bool quick_run() {
  const char* env = std::getenv("MUONPLAN_TEST_QUICK");
  return env != nullptr && std::string(env) == "1";
}

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
