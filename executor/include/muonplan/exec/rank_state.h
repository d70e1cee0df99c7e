// RankState: this rank's shards of every parameter of a Plan and their optimizer state,
// placed as the plan file's shard rules say (shards.h), in the memory the offload policy names
// (offload_policy.h, docs/muon-step.md section 5):
//   none       w, g, m / m_bf16, v on the device
//   optimizer  w, g on the device; m / m_bf16, v in host memory: pinned (Backend::alloc_host)
//              when the plan says optimizer_offload_pinned, else pageable (alloc_pageable)
//   full       w (fp32 master), g (fp32 accumulator), m / m_bf16, v in host memory; the device
//              holds the bf16 compute copy w_compute and backward's bf16 gradients g_compute
#pragma once

#include <cstdint>
#include <vector>

#include "muonplan/exec/backend.h"
#include "muonplan/exec/field.h"  // Field: the arrays of a LocalParam
#include "muonplan/planfile/offload_policy.h"
#include "muonplan/planfile/plan_file.h"

namespace muonplan::exec {

// One parameter's local shard: entries [begin, end) of dim 0 (rows; experts for a stack),
// each `entry_elems` long, contiguous.
struct LocalParam {
  int tensor = 0;
  bool muon = false;
  int64_t begin = 0, end = 0;
  int64_t entry_elems = 1;
  // Whether this rank's copy counts in the digest and is the one a checkpoint stores:
  // replicas (HSDP groups, a replicated layout) hold the same elements, and only the first
  // replica's are counted (shard_of, plan_shards.h).
  bool primary = true;
  float* w = nullptr;         // fp32 master
  float* g = nullptr;         // fp32 gradient
  float* m = nullptr;         // fp32 momentum (Muon without bf16 momentum) or AdamW momentum
  bf16* m_bf16 = nullptr;     // bf16 momentum (Muon with bf16 momentum)
  float* v = nullptr;         // AdamW variance
  bf16* w_compute = nullptr;  // `full` offload: bf16 compute weights on the device
  bf16* g_compute = nullptr;  // `full` offload: backward's bf16 gradients on the device

  int64_t elems() const { return (end - begin) * entry_elems; }
  int64_t global_offset() const { return begin * entry_elems; }
};

class RankState {
 public:
  // Allocates every local shard (zeroed) on the backend. world and rank as the plan's.
  RankState(const Plan& plan, Backend& backend, int rank);
  ~RankState();
  RankState(const RankState&) = delete;
  RankState& operator=(const RankState&) = delete;

  // Deterministic initial weights (init.h): the same global values on any world size.
  void init_params();
  // This step's deterministic gradients.
  void load_grads(int64_t step);

  const Plan& plan() const { return plan_; }
  int rank() const { return rank_; }
  int group_position() const { return rank_ % plan_.options.layout.fsdp; }
  LocalParam& param(int tensor) { return params_[index_[tensor]]; }
  const LocalParam& param(int tensor) const { return params_[index_[tensor]]; }
  std::vector<LocalParam>& params() { return params_; }
  const std::vector<LocalParam>& params() const { return params_; }
  Backend& backend() const { return backend_; }
  bool bf16_momentum() const { return plan_.options.bf16_momentum; }
  OffloadMode offload() const { return plan_.options.offload; }
  // Where the arrays live: the offload policy's table (offload_policy.h).
  const OffloadPolicy& policy() const {
    return offload_policy(plan_.options.offload, plan_.options.optimizer_staging);
  }
  bool master_on_host() const { return policy().master == Residence::host; }
  // The state of a Muon tensor (momentum) or an AdamW one (moments).
  bool state_on_host(bool muon) const {
    return (muon ? policy().muon_momentum : policy().adamw_moments) == Residence::host;
  }

  // Bytes of a field of p (0 when p has no such array), and copies of the whole array to and
  // from host memory, wherever it lives. After copy_in of `param` under full offload the bf16
  // compute copy is refreshed too.
  size_t field_bytes(const LocalParam& p, Field f) const;
  void copy_out(const LocalParam& p, Field f, void* host_dst) const;
  void copy_in(LocalParam& p, Field f, const void* host_src);
  // Under full offload: w_compute = bf16(w) for p (host cast, then a copy to the device).
  void refresh_compute_copy(LocalParam& p);

  // Partial digest of parameters and optimizer state (digest.h); sum over ranks is the total.
  uint64_t partial_digest() const;

 private:
  const Plan& plan_;
  Backend& backend_;
  int rank_;
  std::vector<LocalParam> params_;
  std::vector<int> index_;  // tensor -> params_ position
  std::vector<void*> host_allocs_, pageable_allocs_, device_allocs_;
};

}  // namespace muonplan::exec
