// The asynchronous-lanes CPU backend (cpu_async_backend.h): lanes ordered as CUDA streams, so a
// read on one lane of what another lane writes sees the write only through join_lanes; pinned
// copies return before they run, pageable ones after; results equal the CPU backend's.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "muonplan/exec/backend.h"
#include "muonplan/exec/cpu_async_backend.h"

using namespace muonplan::exec;

namespace {

// Long delays (up to 10 s): work no one waits for stays queued for seconds, so the order of the
// tests' operations across lanes is fixed by their waits alone.
CpuAsyncOptions lazy(bool drop_joins = false) {
  CpuAsyncOptions o;
  o.seed = 7;
  o.max_delay_us = 10'000'000;
  o.drop_joins = drop_joins;
  return o;
}

// Lane 0 fills a buffer from pinned memory; lane 1 copies it out, after a join or not. Returns
// what lane 1 read, once lane 1 alone was waited for.
std::vector<float> cross_lane_read(bool join, bool drop_joins) {
  const std::unique_ptr<Backend> b = make_cpu_async_backend(lazy(drop_joins));
  constexpr int64_t n = 64;
  auto* src = static_cast<float*>(b->alloc_host(n * sizeof(float)));
  for (int64_t i = 0; i < n; ++i) src[i] = float(i + 1);
  b->set_lane(0);
  auto* a = static_cast<float*>(b->alloc(n * sizeof(float)));
  b->copy_to_device(a, src, n * sizeof(float));  // pinned: queued, not run
  if (join) b->join_lanes();
  b->set_lane(1);
  auto* c = static_cast<float*>(b->alloc(n * sizeof(float)));
  b->copy(c, a, n * sizeof(float));
  std::vector<float> out(n);
  b->copy_to_host(out.data(), c, n * sizeof(float));  // pageable: waits for lane 1 only
  b->synchronize();
  b->free(a);
  b->free(c);
  b->free_host(src);
  return out;
}

}  // namespace

TEST_CASE("cpu-async: a read on another lane needs join_lanes", "[cpu_async]") {
  const std::vector<float> joined = cross_lane_read(true, false);
  for (size_t i = 0; i < joined.size(); ++i) CHECK(joined[i] == float(i + 1));
  // Without the join lane 1 reads the allocation before lane 0 zero-filled or wrote it: the
  // poison (NaN) of fresh pool memory.
  for (bool drop : {false, true}) {
    const std::vector<float> raced = cross_lane_read(drop, drop);  // no join, or a dropped one
    for (float v : raced) CHECK(std::isnan(v));
  }
}

TEST_CASE("cpu-async: the same bits as the CPU backend, and pageable copies wait", "[cpu_async]") {
  CpuAsyncOptions o;
  o.seed = 3;
  o.max_delay_us = 200;
  const std::unique_ptr<Backend> async = make_cpu_async_backend(o);
  const std::unique_ptr<Backend> cpu = make_cpu_backend();
  constexpr int64_t m = 24, k = 40;
  std::vector<bf16> x(m * k);
  for (int64_t i = 0; i < m * k; ++i) x[i] = to_bf16(float((i * 37) % 101) / 50.0f - 1.0f);
  auto run = [&](Backend& b, int lane) {
    b.set_lane(lane);
    void* xd = b.alloc(x.size() * sizeof(bf16));
    void* cd = b.alloc(m * m * sizeof(bf16));
    b.copy_to_device(xd, x.data(), x.size() * sizeof(bf16));
    b.gemm_bf16(1, false, true, m, m, k, 1.0f, {xd, m, k, k, 0}, {xd, m, k, k, 0}, 0.0f,
                {cd, m, m, m, 0});
    b.scale_bf16_by(m * m, -0.5f, static_cast<bf16*>(cd), static_cast<bf16*>(cd));
    std::vector<bf16> out(m * m);
    b.copy_to_host(out.data(), cd, out.size() * sizeof(bf16));  // pageable: done on return
    b.free(xd);
    b.free(cd);
    CHECK(b.memory().current_bytes == 0);
    return out;
  };
  const std::vector<bf16> want = run(*cpu, 0);
  for (int lane = 0; lane < Backend::kMaxLanes; ++lane) {
    const std::vector<bf16> got = run(*async, lane);
    CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(bf16)) == 0);
  }
  CHECK(async->name() == "cpu-async");
}
