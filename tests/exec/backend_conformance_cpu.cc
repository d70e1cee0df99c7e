// The backends the executor tests run the conformance suite on: the CPU backend on both GEMM
// paths, cpu-async (its lanes, with delays so that work runs late), the step's timing
// wrapper (timed_backend.h) around each, which must change no result, and the CPU backend with
// its kernel table's optional entries at their defaults (kernels.h), which must give the same
// results as its own.
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

// The CPU backend's kernels run on its table with every optional entry left null, so
// with_defaults() fills them (syrk through the GEMM, scale_bf16_by through scale_bf16, ns_scale
// and transpose through host memory).
class OptionalAtDefaults final : private Owner, public Backend {
 public:
  explicit OptionalAtDefaults(std::unique_ptr<Backend> b)
      : Owner{std::move(b)}, Backend(Wraps{*inner}) {}
  BackendInfo describe() const override { return inner->describe(); }
  void* alloc(size_t bytes, MemoryKind kind) override { return inner->alloc(bytes, kind); }
  void free(void* ptr, MemoryKind kind) override { inner->free(ptr, kind); }
  void copy(void* dst, const void* src, size_t bytes, Copy direction) override {
    inner->copy(dst, src, bytes, direction);
  }
  void synchronize(Sync scope) override { inner->synchronize(scope); }
  void launch(const KernelCall& call) override {
    inner->launch([call](const KernelTable& own, Backend& self) {
      KernelTable required = own;
      required.syrk_bf16 = nullptr;
      required.scale_bf16_by = nullptr;
      required.ns_scale = nullptr;
      required.transpose_bf16 = nullptr;
      call(with_defaults(required), self);
    });
  }
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
           [delayed] { return std::make_unique<OwningTimed>(make_cpu_async_backend(delayed)); }},
          {"cpu, optional kernels at their defaults", [] {
             return std::make_unique<OptionalAtDefaults>(make_cpu_backend(CpuGemm::openblas));
           }}};
}

}  // namespace muonplan::exec::conformance
