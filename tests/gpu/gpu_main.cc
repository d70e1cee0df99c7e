// Main of the GPU Catch2 tests: skips the whole binary (exit 77, ctest's SKIP_RETURN_CODE)
// where the machine has no GPU, as CI does (cudaErrorInsufficientDriver). Where nvidia-smi
// lists a GPU but CUDA cannot start (a driver too old for this toolkit), it fails instead:
// that is a broken GPU machine, not a machine without one.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "muonplan/exec/cuda_device.h"

namespace {

// Whether `nvidia-smi -L` (when installed) lists a GPU.
bool nvidia_smi_sees_gpu() {
  FILE* p = popen("nvidia-smi -L 2>/dev/null", "r");
  if (p == nullptr) return false;
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  pclose(p);
  return out.rfind("GPU ", 0) == 0 || out.find("\nGPU ") != std::string::npos;
}

}  // namespace

int main(int argc, char** argv) {
  const muonplan::exec::CudaDevices d = muonplan::exec::cuda_devices();
  if (d.count == 0 && nvidia_smi_sees_gpu()) {
    std::printf("error: nvidia-smi lists a GPU but CUDA cannot start (error %d: %s)\n",
                d.error_code, d.message.c_str());
    return 1;
  }
  if (d.count == 0) {
    std::printf("skipped: no CUDA device (error %d: %s)\n", d.error_code, d.message.c_str());
    return 77;
  }
  std::printf("device 0: %s, compute capability %d\n", d.name.c_str(), d.compute_capability);
  return Catch::Session().run(argc, argv);
}
