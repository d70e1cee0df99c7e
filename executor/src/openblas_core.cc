// OPENBLAS_CORETYPE from CPUID before OpenBLAS loads (openblas_core.h).
#include "muonplan/exec/openblas_core.h"

#include <cblas.h>

#include <cstdlib>

namespace muonplan::exec {
namespace {

const char* g_origin = "openblas";

void choose_openblas_core(int, char**, char**) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) {
    g_origin = "environment";
    return;
  }
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512vl");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const char* core = avx512 && avx2 ? "SkylakeX" : avx2 ? "Haswell" : nullptr;
  if (core != nullptr && setenv("OPENBLAS_CORETYPE", core, 0) == 0) g_origin = "muonplan";
}

// Runs before the constructors of the shared libraries (OpenBLAS's among them). Only an
// executable has a .preinit_array: muonplan_exec is linked into executables only, and this
// object comes with the CPU backend (cpu_backend.cc calls openblas_core_origin).
__attribute__((section(".preinit_array"),
               used)) void (*const kPreinit)(int, char**, char**) = &choose_openblas_core;

}  // namespace

std::string openblas_core_name() {
  return openblas_get_corename();
}

std::string openblas_core_origin() {
  return g_origin;
}

}  // namespace muonplan::exec
