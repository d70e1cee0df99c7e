// cuBLAS's entry points by dlopen/dlsym (cublas_loader.h says why it is not linked).
#include "cublas_loader.h"

#include <dlfcn.h>

#include <stdexcept>
#include <string>
#include <type_traits>

namespace muonplan::exec::cuda {
namespace {

// The exported name of a cuBLAS function: cublas_v2.h maps some to their _v2 symbols
// (cublasCreate -> cublasCreate_v2), so the name is taken after macro expansion.
#define MUONPLAN_SYMBOL_NAME(f) MUONPLAN_SYMBOL_NAME_(f)
#define MUONPLAN_SYMBOL_NAME_(f) #f

// Each table entry has the type of the header's declaration. Unevaluated (decltype), so no
// reference to the symbol reaches the linker; a cast picks the overload CUDA's cublas_api.h adds
// for C++ (cudaDataType compute types) and fails to compile if the types drifted apart.
#define MUONPLAN_CHECK_TYPE(field, f)                                                  \
  static_assert(std::is_same_v<decltype(CublasApi::field),                             \
                               decltype(static_cast<decltype(CublasApi::field)>(&f))>, \
                #f " does not match CublasApi::" #field)

MUONPLAN_CHECK_TYPE(create, cublasCreate);
MUONPLAN_CHECK_TYPE(destroy, cublasDestroy);
MUONPLAN_CHECK_TYPE(set_stream, cublasSetStream);
MUONPLAN_CHECK_TYPE(set_math_mode, cublasSetMathMode);
MUONPLAN_CHECK_TYPE(set_workspace, cublasSetWorkspace);
MUONPLAN_CHECK_TYPE(status_string, cublasGetStatusString);
MUONPLAN_CHECK_TYPE(gemm_strided_batched_ex, cublasGemmStridedBatchedEx);
MUONPLAN_CHECK_TYPE(gemm_batched_ex, cublasGemmBatchedEx);

// A literal, so the bundle's check (tests/gpu/bundle_test.sh) finds the name in the binary.
const std::string kLibrary = "libcublas.so." MUONPLAN_SYMBOL_NAME(CUBLAS_VER_MAJOR);

template <typename F>
void load(void* lib, F& field, const char* name) {
  dlerror();
  void* p = dlsym(lib, name);
  if (!p) {
    const char* why = dlerror();
    throw std::runtime_error(kLibrary + " has no " + name + (why ? std::string(": ") + why : ""));
  }
  field = reinterpret_cast<F>(p);
}

CublasApi load_api() {
  // RTLD_NODELETE: handles and the table outlive any unload at exit.
  void* lib = dlopen(kLibrary.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!lib) {
    const char* why = dlerror();
    throw std::runtime_error("the CUDA backend needs cuBLAS (" + kLibrary +
                             "), which could not be loaded" + (why ? std::string(": ") + why : "") +
                             "; put the CUDA toolkit's lib64 on LD_LIBRARY_PATH");
  }
  CublasApi api{};
  load(lib, api.create, MUONPLAN_SYMBOL_NAME(cublasCreate));
  load(lib, api.destroy, MUONPLAN_SYMBOL_NAME(cublasDestroy));
  load(lib, api.set_stream, MUONPLAN_SYMBOL_NAME(cublasSetStream));
  load(lib, api.set_math_mode, MUONPLAN_SYMBOL_NAME(cublasSetMathMode));
  load(lib, api.set_workspace, MUONPLAN_SYMBOL_NAME(cublasSetWorkspace));
  load(lib, api.status_string, MUONPLAN_SYMBOL_NAME(cublasGetStatusString));
  load(lib, api.gemm_strided_batched_ex, MUONPLAN_SYMBOL_NAME(cublasGemmStridedBatchedEx));
  load(lib, api.gemm_batched_ex, MUONPLAN_SYMBOL_NAME(cublasGemmBatchedEx));
  return api;
}

}  // namespace

const CublasApi& cublas() {
  static const CublasApi api = load_api();  // a failed load throws, and the next call retries
  return api;
}

}  // namespace muonplan::exec::cuda
