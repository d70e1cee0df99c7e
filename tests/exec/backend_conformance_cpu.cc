// The backends the executor tests run the conformance suite on: the CPU backend on both GEMM
// paths, cpu-async (its lanes, with delays so that work runs late), and the step's timing
// wrapper (timed_backend.h) around each, which must change no result.
#include "backend_conformance.h"
#include "muonplan/exec/cpu_async_backend.h"
#include "muonplan/exec/timed_backend.h"

namespace muonplan::exec::conformance {
namespace {

// A TimedBackend that owns the backend it wraps (the step's borrows the rank's): the owner is a
// base so that it is built first.
struct Owner {
  std::unique_ptr<Backend> inner;
};
class OwningTimed : private Owner, public TimedBackend {
 public:
  explicit OwningTimed(std::unique_ptr<Backend> b)
      : Owner{std::move(b)}, TimedBackend(*inner, {&s_, &s_, &s_, &bytes_, &bytes_}) {}

 private:
  double s_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace

std::vector<NamedBackend> conformance_backends() {
  CpuAsyncOptions delayed;
  delayed.seed = 7;
  delayed.max_delay_us = 200;
  return {{"cpu (openblas)", [] { return make_cpu_backend(CpuGemm::openblas); }},
          {"cpu (default path)", [] { return make_cpu_backend(); }},
          {"cpu-async", [] { return make_cpu_async_backend(CpuAsyncOptions{}); }},
          {"cpu-async (delays)", [delayed] { return make_cpu_async_backend(delayed); }},
          {"timed cpu",
           [] { return std::make_unique<OwningTimed>(make_cpu_backend(CpuGemm::openblas)); }},
          {"timed cpu-async (delays)",
           [delayed] { return std::make_unique<OwningTimed>(make_cpu_async_backend(delayed)); }}};
}

}  // namespace muonplan::exec::conformance
