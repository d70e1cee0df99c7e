// fp64 Newton-Schulz on the host, for tests: the same algorithm and coefficients as
// newton_schulz() (newton_schulz.h) with every value in double and nothing rounded to bf16.
// Plain loops, parallel over rows (OpenMP); fine for matrices up to about 1024 x 1024.
#pragma once

#include <cstdint>

#include "muonplan/planfile/ns_schedule.h"

namespace muonplan::exec {

// out = NS(u) for one row-major [rows, cols] matrix; u and out are host memory, out is
// [rows, cols] too and must not overlap u.
void newton_schulz_reference(const NsSchedule& schedule, int64_t rows, int64_t cols,
                             const double* u, double* out);

}  // namespace muonplan::exec
