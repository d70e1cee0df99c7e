// The step's timing wrapper (timed_backend.h): what it counts where. Its results are the
// wrapped backend's (the conformance suite runs through it: backend_conformance_cpu.cc); here,
// that each call's bytes and time go to the counter of its kind and to no other.
#include "muonplan/exec/timed_backend.h"

#include <catch2/catch.hpp>
#include <vector>

#include "muonplan/exec/cpu_async_backend.h"

using namespace muonplan::exec;

namespace {

struct Counts {
  double kernel_s = 0, h2d_s = 0, d2h_s = 0;
  uint64_t h2d_bytes = 0, d2h_bytes = 0;
  CallCounters to() { return {&kernel_s, &h2d_s, &d2h_s, &h2d_bytes, &d2h_bytes}; }
};

}  // namespace

TEST_CASE("timed backend: copies count their bytes by direction, device copies none",
          "[timed_backend]") {
  const std::unique_ptr<Backend> inner = make_cpu_async_backend(CpuAsyncOptions{});
  Counts n;
  TimedBackend b(*inner, n.to());
  std::vector<float> host(300, 1.5f), back(300, 0.0f);
  void* d = b.alloc(1200);
  void* e = b.alloc(1200);
  b.copy_to_device(d, host.data(), 1200);
  b.copy(e, d, 800);
  b.copy_to_host(back.data(), e, 400);
  b.synchronize();
  CHECK(n.h2d_bytes == 1200);
  CHECK(n.d2h_bytes == 400);
  CHECK(back[99] == 1.5f);
  CHECK(back[100] == 0.0f);  // 400 bytes came back, the rest is the zero-filled start
  b.free(d);
  b.free(e);
  b.synchronize();
  CHECK(inner->memory().current_bytes == 0);  // alloc and free reach the wrapped backend
}

TEST_CASE("timed backend: kernels and device copies count as kernel time only", "[timed_backend]") {
  const std::unique_ptr<Backend> inner = make_cpu_backend(CpuGemm::openblas);
  Counts n;
  TimedBackend b(*inner, n.to());
  auto* x = static_cast<float*>(b.alloc(4096 * sizeof(float)));
  auto* y = static_cast<bf16*>(b.alloc(4096 * sizeof(bf16)));
  b.cast_to_bf16(4096, x, y);
  b.copy(y, y + 2048, 2048 * sizeof(bf16));
  b.synchronize_lane();  // the lane's last call was a device copy: kernel time
  // No copy between host and device: their counters were never touched (exactly zero).
  CHECK(n.h2d_s == 0.0);
  CHECK(n.d2h_s == 0.0);
  CHECK(n.h2d_bytes == 0);
  CHECK(n.d2h_bytes == 0);
  b.free(x);
  b.free(y);
}

TEST_CASE("timed backend: a lane's wait counts as its last call's kind, lane by lane",
          "[timed_backend]") {
  const std::unique_ptr<Backend> inner = make_cpu_async_backend(CpuAsyncOptions{});
  Counts n;
  TimedBackend b(*inner, n.to());
  std::vector<bf16> host(1024);
  auto* d = static_cast<bf16*>(b.alloc(1024 * sizeof(bf16)));
  b.set_lane(2);
  b.copy_to_device(d, host.data(), 1024 * sizeof(bf16));  // pageable: waits, counted as h2d
  b.set_lane(1);
  const double h2d = n.h2d_s, kernel = n.kernel_s;
  b.synchronize_lane();  // nothing ran on lane 1 yet: no counter
  CHECK(n.h2d_s == h2d);
  CHECK(n.kernel_s == kernel);
  CHECK(n.d2h_s == 0.0);
  b.set_lane(2);
  b.synchronize_lane();  // lane 2's last call was the copy in: h2d, never d2h
  CHECK(n.d2h_s == 0.0);
  CHECK(n.kernel_s == kernel);
  CHECK_THROWS_AS(b.set_lane(Backend::kMaxLanes), std::invalid_argument);
  b.set_lane(0);
  b.free(d);
  b.synchronize();
}
