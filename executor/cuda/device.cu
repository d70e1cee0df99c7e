// CUDA device discovery: the first piece of the CUDA backend (its issue builds the rest on
// it). Runtime API only: never the driver library, of which CI has only a stub.
#include <cuda_runtime.h>

#include "muonplan/exec/cuda_device.h"

namespace muonplan::exec {

CudaDevices cuda_devices() {
  CudaDevices d;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  d.error_code = static_cast<int>(err);
  if (err != cudaSuccess) {
    // cudaErrorInsufficientDriver (35) or cudaErrorNoDevice (100): no usable GPU here.
    d.message = cudaGetErrorString(err);
    cudaGetLastError();  // clear the sticky error
    return d;
  }
  d.count = count;
  if (count > 0) {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
      d.name = prop.name;
      d.memory_bytes = prop.totalGlobalMem;
      d.sm_count = prop.multiProcessorCount;
      d.compute_capability = prop.major * 10 + prop.minor;
    }
  }
  return d;
}

}  // namespace muonplan::exec
