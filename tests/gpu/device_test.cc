// GPU smoke test: finds the device and its figures, or skips cleanly (exit 77) where the
// machine has none, as CI does (cudaErrorInsufficientDriver).
#include <cstdio>

#include "muonplan/exec/cuda_device.h"

int main() {
  const muonplan::exec::CudaDevices d = muonplan::exec::cuda_devices();
  if (d.count == 0) {
    std::printf("skipped: no CUDA device (error %d: %s)\n", d.error_code, d.message.c_str());
    return 77;
  }
  std::printf("device 0: %s, %.1f GiB, %d SMs, compute capability %d\n", d.name.c_str(),
              d.memory_bytes / 1073741824.0, d.sm_count, d.compute_capability);
  const bool sane = d.memory_bytes > 0 && d.sm_count > 0 && d.compute_capability >= 70;
  std::printf("%d passed, %d failed\n", sane ? 1 : 0, sane ? 0 : 1);
  return sane ? 0 : 1;
}
