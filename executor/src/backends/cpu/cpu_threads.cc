#include "muonplan/exec/cpu_threads.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace muonplan::exec {

int configure_cpu_threads(int local_ranks) {
  if (std::getenv("OMP_NUM_THREADS") == nullptr) {
    const int cores = std::max(1u, std::thread::hardware_concurrency());
    omp_set_num_threads(std::max(1, cores / std::max(1, local_ranks)));
  }
  return omp_get_max_threads();
}

}  // namespace muonplan::exec
