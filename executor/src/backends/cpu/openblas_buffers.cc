// OpenBLAS's per-thread GEMM buffers, taken when the CPU backend starts (cpu_kernels.h).
//
// OpenBLAS gives every thread that calls a GEMM a buffer of its own on its first call (128 MiB
// in Debian's build, BUFFER_SIZE), and when that allocation fails it retries forever: under an
// address-space cap (`ulimit -v 1500000`) a 1-step `execute` of tiny-dense hung in
// blas_memory_alloc inside the first Newton-Schulz GEMM until the launcher killed it. Taking
// the buffers first, on every OpenMP thread, before the plan's state is allocated, turns that
// into either a clear refusal here or an ordinary out-of-memory error later.
#include <cblas.h>
#include <omp.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cpu/cpu_kernels.h"

namespace muonplan::exec::cpu {

namespace {

// Debian's OpenBLAS BUFFER_SIZE (128 MiB) and its alignment slack, with room to spare.
constexpr size_t kOpenblasBufferBytes = size_t{136} << 20;
// What oneDNN 2.6 maps creating its first matmul primitives (JIT code, scratchpads), with room.
// On the 2-core VM (1.17 GB mapped when the backend starts, 2 OpenMP threads) a 1-step
// `execute` of tiny-moe ran at `ulimit -v 1800000`; at 1700000 oneDNN's dnnl_primitive_create
// dereferenced a failed allocation (SIGSEGV). With these figures the check refuses below about
// 1.85 GB.
constexpr size_t kOnednnBytes = size_t{384} << 20;

// Whether `bytes` more of address space can be mapped now (the cap counts every mapping).
bool address_space_has(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  munmap(p, bytes);
  return true;
}

}  // namespace

void reserve_openblas_buffers(bool onednn) {
  const int threads = omp_get_max_threads();
  const size_t need = kOpenblasBufferBytes * size_t(threads) + (onednn ? kOnednnBytes : 0);
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY && !address_space_has(need)) {
    throw std::runtime_error(
        "the address-space limit (ulimit -v " + std::to_string(as.rlim_cur / 1024) +
        " KiB) leaves no room for the GEMM libraries' buffers (OpenBLAS 136 MiB for each of " +
        std::to_string(threads) + " OpenMP thread(s)" +
        (onednn ? std::string(", oneDNN 384 MiB") : std::string()) +
        "); raise it, or lower OMP_NUM_THREADS");
  }
  // A GEMM large enough for OpenBLAS's buffered path (its small-matrix kernels take none).
  constexpr int n = 256;
#pragma omp parallel num_threads(threads)
  {
    std::vector<float> a(size_t(n) * n, 0.0f), c(size_t(n) * n, 0.0f);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, a.data(), n,
                0.0f, c.data(), n);
  }
}

}  // namespace muonplan::exec::cpu
