// Main of the GPU Catch2 tests: skips the whole binary (exit 77, ctest's SKIP_RETURN_CODE)
// where the machine has no usable CUDA device, as CI does (cudaErrorInsufficientDriver).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>

#include "muonplan/exec/cuda_device.h"

int main(int argc, char** argv) {
  const muonplan::exec::CudaDevices d = muonplan::exec::cuda_devices();
  if (d.count == 0) {
    std::printf("skipped: no CUDA device (error %d: %s)\n", d.error_code, d.message.c_str());
    return 77;
  }
  std::printf("device 0: %s, compute capability %d\n", d.name.c_str(), d.compute_capability);
  return Catch::Session().run(argc, argv);
}
