// Error checks of the CUDA backend and the NCCL communicator: a failed call becomes an
// exception naming the call and carrying the library's own text.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace muonplan::exec::cuda {

inline void check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so later calls do not report it again
  throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

}  // namespace muonplan::exec::cuda
