// The yardstick for `muonplan bench ns`: the rate a plain fp32 sgemm reaches on this CPU.
#pragma once

#include <cstdint>

namespace muonplan::exec {

// Median GFLOP/s of OpenBLAS cblas_sgemm on n x n x n fp32 matrices over `reps` timed calls
// (after one warm-up), using `threads` OpenBLAS threads (the library's own threading, as any
// sgemm user sees it). Restores OpenBLAS's previous thread count afterwards.
double openblas_sgemm_gflops(int64_t n, int reps, int threads);

}  // namespace muonplan::exec
