// The step's private parts, shared by step.cc, step_offload.cc and host_pipeline.cc: scoped
// backend buffers and timers, and the MuonStep members that hold a chunk's buffers and staged
// state.
#pragma once

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "muonplan/exec/step.h"

namespace muonplan::exec {

using Span = StepTrace::Span;

namespace step_detail {

// Rows [begin, end) of a tensor's dim 0 that group position j holds (the plan's shard rule),
// within one matrix (a partition starting at row_offset).
inline Range slice_rows(const Plan& plan, int j, const MatrixRef& m) {
  const ParamTensor& t = plan.inventory.tensors[m.tensor];
  const Range held = plan.shards[m.tensor].range(t.shape[0], j);
  return {std::max(held.begin, m.row_offset), std::min(held.end, m.row_offset + m.rows)};
}

// Elements of my slice of matrix m, group position j: what a batch sends of it (start_batch).
inline int64_t slice_elems(const Plan& plan, int j, const MatrixRef& m) {
  return std::max<int64_t>(0, slice_rows(plan, j, m).size()) * m.cols;
}

// Muon batches in flight (the plan's, within the backend's lanes).
inline size_t flight_depth(const Plan& plan) {
  return static_cast<size_t>(std::clamp(plan.batches_in_flight, 1, Backend::kMaxLanes));
}

// The lane of the k-th batch of a step: lane 0 is for local chunks and AdamW; batches take
// lanes 1..depth when there are enough, so a batch never waits behind unrelated work.
inline int batch_lane(const Plan& plan, int64_t k) {
  const size_t depth = flight_depth(plan);
  return int(size_t(k) % depth) + (depth < size_t(Backend::kMaxLanes));
}

// The matrices of a local chunk this rank orthogonalizes: a stack's experts it holds, or the
// one replicated matrix (0 where it holds none).
inline int64_t local_count(const RankState& state, const Chunk& c) {
  const MatrixRef& m = c.matrices[0];
  const LocalParam& p = state.param(m.tensor);
  if (state.plan().inventory.tensors[m.tensor].stack_dim == 0) return p.end - p.begin;
  return p.elems() > 0 ? 1 : 0;
}

// Backend memory freed when it goes out of scope.
struct Buffer {
  Backend* backend = nullptr;
  void* ptr = nullptr;
  Buffer() = default;
  Buffer(Backend& b, size_t bytes) : backend(&b), ptr(bytes ? b.alloc(bytes) : nullptr) {}
  Buffer(Buffer&& o) noexcept : backend(o.backend), ptr(o.ptr) { o.ptr = nullptr; }
  Buffer& operator=(Buffer&& o) noexcept {
    std::swap(backend, o.backend);
    std::swap(ptr, o.ptr);
    return *this;
  }
  ~Buffer() {
    if (ptr) backend->free(ptr);
  }
  bf16* bf() const { return static_cast<bf16*>(ptr); }
  float* f32() const { return static_cast<float*>(ptr); }
};

// Frees alloc_host memory: a unique_ptr's deleter.
struct HostFree {
  Backend* backend;
  void operator()(void* p) const { backend->free_host(p); }
};

// Adds the wall time of its scope to a counter.
class Timed {
 public:
  explicit Timed(double& sink) : sink_(sink), t0_(std::chrono::steady_clock::now()) {}
  ~Timed() {
    sink_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;

 private:
  double& sink_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace step_detail

// A Muon batch between its two exchanges.
struct MuonStep::Flight {
  const Chunk* chunk = nullptr;
  int lane = 0;
  int owned = -1;               // index of the matrix this rank owns, or -1
  std::vector<int64_t> my_pos;  // per matrix: element offset of my slice in send1/recv2
  std::vector<int64_t> my_len;  // per matrix: elements of my slice
  int64_t my_total = 0;         // elements of all my slices
  step_detail::Buffer send1, gathered, recv2;
  std::vector<size_t> s1_bytes, s1_displs, r1_bytes, r1_displs;
  std::unique_ptr<Request> ex1, ex2;
  StepTrace::Clock::time_point ex1_at, ex2_at;  // when each exchange started (tracing only)
  bool orthogonalized = false;
};

// Device pointers to a slice of one parameter's optimizer state while a chunk uses it.
struct MuonStep::StateSlice {
  float* m = nullptr;
  bf16* m_bf16 = nullptr;
  float* v = nullptr;
  step_detail::Buffer hold,
      hold_v;  // `chunked` staging: the device copies (m, v), written back by state_out
  LocalParam* p = nullptr;
  int64_t off = 0, len = 0;
};

}  // namespace muonplan::exec
