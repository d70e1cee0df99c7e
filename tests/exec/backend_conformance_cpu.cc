// The backends the executor tests run the conformance suite on: the CPU backend on both GEMM
// paths and cpu-async (its lanes, with delays so that work runs late).
#include "backend_conformance.h"
#include "muonplan/exec/cpu_async_backend.h"

namespace muonplan::exec::conformance {

std::vector<NamedBackend> conformance_backends() {
  CpuAsyncOptions delayed;
  delayed.seed = 7;
  delayed.max_delay_us = 200;
  return {{"cpu (openblas)", [] { return make_cpu_backend(CpuGemm::openblas); }},
          {"cpu (default path)", [] { return make_cpu_backend(); }},
          {"cpu-async", [] { return make_cpu_async_backend(CpuAsyncOptions{}); }},
          {"cpu-async (delays)", [delayed] { return make_cpu_async_backend(delayed); }}};
}

}  // namespace muonplan::exec::conformance
