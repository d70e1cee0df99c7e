// cuBLAS, loaded when the first CUDA backend is made rather than linked into the process.
// Loading libcublasLt runs its static initializers, about 0.4 s of page faults per process on
// this project's 2-core VMs (perf record of `muonplan --version`: call_init in libcublasLt, 43%
// of the run), and every `muonplan` command paid it, `plan` and `--help` included, as did every
// rank of every CPU test. Only the CUDA backend calls cuBLAS, through this table; its types are
// cublas_v2.h's, checked against the header's declarations at compile time (cublas_loader.cc).
#pragma once

#include <cublas_v2.h>

namespace muonplan::exec::cuda {

struct CublasApi {
  cublasStatus_t (*create)(cublasHandle_t*);
  cublasStatus_t (*destroy)(cublasHandle_t);
  cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
  cublasStatus_t (*set_math_mode)(cublasHandle_t, cublasMath_t);
  cublasStatus_t (*set_workspace)(cublasHandle_t, void*, size_t);
  const char* (*status_string)(cublasStatus_t);
  cublasStatus_t (*gemm_strided_batched_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                            int, int, int, const void*, const void*, cudaDataType,
                                            int, long long int, const void*, cudaDataType, int,
                                            long long int, const void*, void*, cudaDataType, int,
                                            long long int, int, cublasComputeType_t,
                                            cublasGemmAlgo_t);
  cublasStatus_t (*gemm_batched_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const void*, const void* const[], cudaDataType, int,
                                    const void* const[], cudaDataType, int, const void*,
                                    void* const[], cudaDataType, int, int, cublasComputeType_t,
                                    cublasGemmAlgo_t);
};

// The library's entry points, loaded once (thread-safe) from libcublas.so.<CUBLAS_VER_MAJOR>
// by the loader's search path (LD_LIBRARY_PATH, then the system's). std::runtime_error naming
// the library and dlerror() when it or an entry point is missing.
const CublasApi& cublas();

}  // namespace muonplan::exec::cuda
