// What CUDA devices this process sees. Built only when nvcc is found (MUONPLAN_HAVE_CUDA);
// without a GPU it reports the runtime's error instead of failing, so GPU tests can skip.
#pragma once

#include <cstddef>
#include <string>

namespace muonplan::exec {

struct CudaDevices {
  int count = 0;        // usable devices; 0 when none or no driver
  int error_code = 0;   // cudaGetDeviceCount's error (35: no driver, 100: no device)
  std::string message;  // the runtime's text for error_code
  std::string name;     // device 0
  size_t memory_bytes = 0;
  int sm_count = 0;
  int compute_capability = 0;  // 90 for Hopper
};

CudaDevices cuda_devices();

}  // namespace muonplan::exec
