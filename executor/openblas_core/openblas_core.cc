// libmuonplan_openblas_core.so: OPENBLAS_CORETYPE from CPUID before OpenBLAS loads
// (muonplan/exec/openblas_core.h). A shared library of its own, because only a shared library's
// constructor runs at the right moment: after libc's (setenv works; an executable's
// .preinit_array runs before libc has its environment, so a setenv there is lost) and before
// OpenBLAS's, which reads OPENBLAS_CORETYPE. The loader initializes the direct dependencies of
// the executable from the last to the first, so this library is linked after OpenBLAS
// (executor/CMakeLists.txt) and does not depend on it.
#include <cstdlib>
#include <cstring>

namespace {

const char* g_origin = "openblas";

// SkylakeX where CPUID has AVX-512 (F, CD, BW, DQ, VL) and AVX2 + FMA, Haswell where it has AVX2
// + FMA, none otherwise (scripts/openblas-core.sh's choice). MUONPLAN_OPENBLAS_CORE replaces the
// CPUID choice: the test that shows this runs before OpenBLAS sets it.
const char* cpuid_core() {
  const char* forced = std::getenv("MUONPLAN_OPENBLAS_CORE");
  if (forced != nullptr && *forced != '\0') return forced;
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512vl");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return avx512 && avx2 ? "SkylakeX" : avx2 ? "Haswell" : nullptr;
}

__attribute__((constructor)) void choose_openblas_core() {
  // One OpenBLAS thread unless the user asks for more: the CPU backend calls OpenBLAS from its
  // own OpenMP tasks, one thread each (cpu_backend.cc), and `bench ns` raises the count itself.
  // The pool OpenBLAS would start at load gives each worker a 128 MB buffer, and under an
  // address-space cap (`ulimit -v 1000000`) a worker's malloc hung in glibc's arena_get2 while
  // exit() waited to join it: every command, even `inspect`, never returned, its output unflushed.
  setenv("OPENBLAS_NUM_THREADS", "1", 0);
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) {
    g_origin = "environment";
    return;
  }
  const char* core = cpuid_core();
  if (core != nullptr && setenv("OPENBLAS_CORETYPE", core, 0) == 0) g_origin = "muonplan";
}

}  // namespace

extern "C" const char* muonplan_openblas_core_origin() {
  return g_origin;
}
