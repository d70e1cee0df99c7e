// The bytes the step allocates, stated once (docs/muon-step.md sections 3 and 5), as
// ns_workspace.h states the NS workspace: per local element, the arrays a rank keeps between
// steps (the executor's rank_state.cc allocates them, the cost model's gpu_persistent.cc counts
// them); per chunk, the buffers the step holds while the chunk is in flight and the optimizer
// state it stages (the executor's step.cc and step_offload.cc allocate them, chunk_costs.cc
// counts them). The executor allocates by these functions and the planner counts by them, so a
// change to a buffer changes both; predicted_equals_allocated.sh checks the whole step end to end.
#pragma once

#include <cstddef>
#include <cstdint>

namespace muonplan {

// Bytes per element of each array a rank keeps between steps.
namespace elem_bytes {
inline constexpr size_t kMaster = 4;        // fp32 weights
inline constexpr size_t kGrad = 4;          // fp32 gradient accumulator
inline constexpr size_t kComputeCopy = 2;   // bf16 weights, and bf16 gradients (full offload)
inline constexpr size_t kMomentumF32 = 4;   // fp32 momentum (Muon, and AdamW's first moment)
inline constexpr size_t kMomentumBf16 = 2;  // --bf16-momentum: Muon's momentum only
inline constexpr size_t kSecondMoment = 4;  // AdamW's fp32 variance
inline constexpr size_t kExchanged = 2;     // a bf16 element of the step's buffers
}  // namespace elem_bytes

// Optimizer state of one element, in two arrays: the momentum and (AdamW) the second moment.
// AdamW's moments stay fp32 with --bf16-momentum.
struct StateElemBytes {
  size_t momentum = 0, variance = 0;
  constexpr size_t total() const { return momentum + variance; }
};
constexpr StateElemBytes state_elem_bytes(bool muon, bool bf16_momentum) {
  if (muon) return {bf16_momentum ? elem_bytes::kMomentumBf16 : elem_bytes::kMomentumF32, 0};
  return {elem_bytes::kMomentumF32, elem_bytes::kSecondMoment};
}

// The state of `elems` elements of one tensor staged on the device (`chunked` staging's piece, or
// `whole` staging's tensor): one allocation per array, no padding between them.
struct StagedState {
  size_t momentum = 0, variance = 0;  // bytes
  constexpr size_t total() const { return momentum + variance; }
};
constexpr StagedState staged_state(bool muon, bool bf16_momentum, int64_t elems) {
  const StateElemBytes b = state_elem_bytes(muon, bf16_momentum);
  const auto n = static_cast<size_t>(elems);
  return {n * b.momentum, n * b.variance};
}

// One Muon batch on one rank while it is in flight (MuonStep::start_batch): the send buffer of
// exchange 1 holds my slices of every matrix of the batch (padding matrices' zero slices too:
// they travel), the return buffer of exchange 2 the same elements back, and an owner holds the
// whole gathered matrix [rows, cols] (bf16 each).
struct BatchBuffers {
  size_t send = 0, recv = 0, gathered = 0;  // bytes
  constexpr size_t total() const { return send + recv + gathered; }
};
constexpr BatchBuffers batch_buffers(int64_t slice_elems, bool owns, int64_t rows, int64_t cols) {
  const size_t slices = static_cast<size_t>(slice_elems) * elem_bytes::kExchanged;
  return {slices, slices, owns ? static_cast<size_t>(rows * cols) * elem_bytes::kExchanged : 0};
}

// A local chunk (MuonStep::local_chunk): the bf16 copies of its `count` matrices [rows, cols],
// orthogonalized in place.
constexpr size_t local_chunk_bytes(int64_t count, int64_t rows, int64_t cols) {
  return static_cast<size_t>(count * rows * cols) * elem_bytes::kExchanged;
}

// The step's non-finite check (docs/muon-step.md section 6; MuonStep::run): one fp32 sum per
// chunk of the plan and one per tensor (AdamW's weights), zero-filled on the device before the
// step and read back after it.
constexpr size_t nonfinite_check_bytes(size_t chunks, size_t tensors) {
  return (chunks + tensors) * sizeof(float);
}

}  // namespace muonplan
