// The backend the GPU tests run the conformance suite (tests/exec/backend_conformance_test.cc)
// on: CUDA device 0 (gpu_main.cc skips the binary where there is none).
#include "backend_conformance.h"
#include "muonplan/exec/cuda_backend.h"

namespace muonplan::exec::conformance {

std::vector<NamedBackend> conformance_backends() {
  return {{"cuda", [] { return std::unique_ptr<Backend>(make_cuda_backend(0)); }}};
}

}  // namespace muonplan::exec::conformance
