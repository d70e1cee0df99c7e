// Which OpenBLAS kernel the process runs (docs/executor.md, "OpenBLAS's kernel").
//
// Debian's OpenBLAS picks its kernels by CPU model when it loads, and takes a virtual CPU it does
// not know ("Intel(R) Xeon(R) Processor") for a Prescott: SSE3 kernels on an AVX-512 core, unless
// OPENBLAS_CORETYPE says otherwise. A setenv() in main() comes too late (OpenBLAS reads it in
// its constructor), so libmuonplan_openblas_core.so (executor/openblas_core/) sets it from its
// own constructor, which the loader runs before OpenBLAS's: when OPENBLAS_CORETYPE is unset, it
// becomes SkylakeX where CPUID has AVX-512 (F, CD, BW, DQ, VL), else Haswell where it has AVX2
// and FMA (the choice of scripts/openblas-core.sh). Child processes inherit it.
#pragma once

#include <string>

namespace muonplan::exec {

// openblas_get_corename(): the kernel OpenBLAS runs, e.g. "SkylakeX".
std::string openblas_core_name();
// Who chose it: "environment" (OPENBLAS_CORETYPE was set when the process started), "muonplan"
// (set by the preinit hook from CPUID) or "openblas" (OpenBLAS's own choice: CPUID has neither
// AVX-512 nor AVX2).
std::string openblas_core_origin();

}  // namespace muonplan::exec
