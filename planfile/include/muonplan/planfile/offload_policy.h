// One offload policy (docs/muon-step.md section 5): per offload mode and staging, where each
// array lives, in which dtype, what moves each way per step, how many batches are in flight and
// whether Nesterov is allowed. The one statement of those rules: the cost model's memory and
// traffic terms, the executor's allocation (RankState) and the step's pipelines read this table
// rather than branching on the mode.
#pragma once

#include "muonplan/planfile/plan_options.h"

namespace muonplan {

enum class Residence { gpu, host };

struct OffloadPolicy {
  // Between steps. The fp32 master weights and their fp32 gradients live together.
  Residence master = Residence::gpu;
  // The bf16 copy the GPU computes with (forward, backward, NS input) when the master is not
  // there; its bf16 gradients are held until copied to the host.
  bool bf16_compute_copy = false;
  Residence muon_momentum = Residence::gpu;       // fp32, or bf16 with bf16_momentum
  Residence adamw_moments = Residence::gpu;       // fp32 m and v
  OffloadStaging staging = OffloadStaging::none;  // plan_options.h
  // Full offload's host pipeline: the momentum folds on the host from bf16 gradients sent D2H,
  // its bf16 copy goes H2D for NS; the bf16 update comes back D2H and is applied to the fp32
  // master on the host, whose new bf16 weights go H2D; AdamW runs on the host.
  bool host_fold = false;
  bool host_apply = false;
  bool host_adamw = false;
  int batches_in_flight = 3;
  // Nesterov forms the NS input from the momentum and the gradient together; where the host
  // folds the momentum, only its bf16 copy reaches the GPU.
  bool nesterov_allowed = true;
};

// The table's row for `mode` (staging matters for `optimizer` only: chunked or else whole).
const OffloadPolicy& offload_policy(OffloadMode mode,
                                    OffloadStaging staging = OffloadStaging::whole);

}  // namespace muonplan
