// Forward/backward terms of a training workload (internal to the cost model).
#pragma once

#include "muonplan/cost_model.h"

namespace muonplan {

// What the optimizer-step model hands the training-step model. Under full offload the stages
// that run while backward is still going (bf16 gradients D2H, the CPU fold, the host AdamW or
// signSGD update) are taken out of the optimizer step; what remains is the post-backward phase.
struct OptimizerPhases {
  double post_backward_s = 0;    // makespan of the stages that wait for the whole backward
  double host_update_elems = 0;  // full: params the host updates during backward (AdamW, signSGD)
  double muon_elems = 0;         // busiest rank's Muon elements
  double all_elems = 0;          // busiest rank's elements
  double cpu_bps_per_rank = 0;   // host kernel bandwidth one rank gets
  double d2h_bps = 0, h2d_bps = 0;  // PCIe rates in force
};

// Adds activation, gathered-weight and logits bytes, AC-offload host bytes, FSDP, expert- and
// context-parallel traffic and the training-step terms to p (docs/planner.md section 8).
void add_workload_terms(const ModelSpec& spec, const ParamInventory& inv, const Topology& topo,
                        const PlanOptions& o, const ChunkPlan& plan, const OptimizerPhases& opt,
                        Prediction& p);

}  // namespace muonplan
