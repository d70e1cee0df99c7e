// Threads for the CPU backend when several ranks share a node: each rank gets its share of the
// cores, so oversubscribed runs (8 ranks on 2 cores in CI) do not thrash. The results do not
// depend on the thread count (backend.h), only the speed does.
#pragma once

namespace muonplan::exec {

// Sets the OpenMP thread count to max(1, cores / local_ranks) unless OMP_NUM_THREADS is set;
// returns the count in force.
int configure_cpu_threads(int local_ranks);

}  // namespace muonplan::exec
