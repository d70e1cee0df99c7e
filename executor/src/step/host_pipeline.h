// Full offload's host pipeline (docs/muon-step.md section 5; offload_policy.h's host_fold,
// host_apply, host_adamw): one object the step holds only when the plan's policy has it, in
// place of branches on the mode through the step. During backward the bf16 gradients come to
// the host and fold into the host momentum, and AdamW runs on the host; per Muon batch the bf16
// momentum goes to the device, the bf16 update -s * NS(M) comes back, and the host adds it into
// the fp32 master and sends the new bf16 weights. The device side (NS, the exchanges) is the
// step's, the same for every mode.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "muonplan/exec/rank_state.h"
#include "muonplan/exec/step.h"
#include "muonplan/exec/step_trace.h"

namespace muonplan::exec {

class HostPipeline {
 public:
  // The pipeline's passes come together: a policy with some of host_fold, host_apply and
  // host_adamw but not all (or without the bf16 compute copy) is std::invalid_argument.
  static std::unique_ptr<HostPipeline> for_policy(const OffloadPolicy& policy, RankState& state,
                                                  Backend& backend, StepCounters& counters,
                                                  StepTrace& trace);
  HostPipeline(RankState& state, Backend& backend, StepCounters& counters, StepTrace& trace);
  ~HostPipeline();

  // During backward, before the batches: every tensor's gradients to the host, the momentum
  // folds. AdamW (adamw) runs after these.
  void gradients_and_folds();
  // The bf16 NS input of elements [off, off + len) of p to u (device), through host_stage
  // (pinned, len elements) when the momentum is fp32.
  void momentum_to_device(LocalParam& p, int64_t off, int64_t len, bf16* u, bf16* host_stage);
  // u = bf16(-s * u) on the device, then to host_update; the host reads it when this returns.
  void update_to_host(bf16* u, int64_t len, float s, bf16* host_update);
  // Adds the update (host_update, len elements) into elements [off, off + len) of p's master
  // with decay, and sends the new bf16 weights (through host_weights) to the device copy.
  void apply(LocalParam& p, int64_t off, int64_t len, float decay, const bf16* host_update,
             bf16* host_weights);
  // Host AdamW on p, its new weights to the device; returns the sum of squares of the new
  // weights (the step's non-finite check).
  double adamw(LocalParam& p, float lr, float b1, float b2, float eps, float wd, int64_t step);

  // A lane's pinned buffers for the momentum going out, the update coming back and the
  // weights going out (the planner's pinned_staging), of at least `elems` elements each.
  struct Staging {
    bf16 *momentum = nullptr, *update = nullptr, *weights = nullptr;
  };
  Staging staging(int lane, int64_t elems);

 private:
  struct LaneBuffers;
  // The two pinned buffers and the piece size that gradients and weights relay through: the
  // staging of the first batch lane, at this rank's largest chunk share.
  struct Relay {
    bf16* buf[2];
    int64_t piece_elems;
  };
  Relay relay();
  int64_t largest_share_elems() const;
  void grads_to_host();
  void fold_all();
  void weights_to_device(LocalParam& p);

  RankState& state_;
  Backend& backend_;
  StepCounters& counters_;
  StepTrace& trace_;
  std::vector<std::unique_ptr<LaneBuffers>> lanes_;  // per lane
  int64_t share_elems_ = -1;                         // largest_share_elems(), once
};

}  // namespace muonplan::exec
