// The Backend conformance suite (issue 37 item 6): one set of cases (backend_conformance.cc)
// that every backend runs through the interface alone (alloc, copies, the kernels), checked
// against the scalar formulas (optimizer_formulas.h) and worked values. Each test binary
// defines which backends it runs: the executor tests cpu and cpu-async, the GPU tests CUDA
// where a device is present.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "muonplan/exec/backend.h"

namespace muonplan::exec::conformance {

struct NamedBackend {
  std::string name;
  std::function<std::unique_ptr<Backend>()> make;
};

// Defined once per test binary (backend_conformance_cpu.cc, tests/gpu/...).
std::vector<NamedBackend> conformance_backends();

}  // namespace muonplan::exec::conformance
