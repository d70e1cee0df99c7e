// Forward/backward terms of a training workload (internal to the cost model).
#pragma once

#include "muonplan/planner/cost_model.h"

namespace muonplan {

// What the optimizer-step model hands the training-step model. Under full offload the stages
// that run while backward is still going (bf16 gradients D2H, the CPU fold, the host AdamW or
// signSGD update) are taken out of the optimizer step; what remains is the post-backward phase.
struct OptimizerPhases {
  double post_backward_s = 0;       // makespan of the stages that wait for the whole backward
  std::string post_backward_bound;  // the busiest resource of that phase and its busy seconds
  double host_update_elems = 0;  // full: params the host updates during backward (AdamW, signSGD)
  double muon_elems = 0;         // busiest rank's Muon elements
  double all_elems = 0;          // busiest rank's elements
  double cpu_bps_per_rank = 0;   // host kernel bandwidth one rank gets
  double d2h_bps = 0, h2d_bps = 0;  // PCIe rates in force
};

// Bytes per element of the host passes over a Muon parameter after backward under full
// offload. muonplan's executor applies the update and writes the bf16 weights in one pass
// (read master, read update, write master, write bf16: 12 B) and folds the bf16 momentum copy
// into the fold; a PyTorch trainer runs each as its own pass: fp32 -> bf16 momentum cast (read
// 4, write 2), decay + update on the fp32 master (read 4 + 2, write 4), bf16 weight cast (read
// 4, write 2): 22 B.
struct HostPasses {
  double momentum_cast_bpe = 0, apply_bpe = 12, weight_cast_bpe = 0;
};
HostPasses host_passes(const PlanOptions& o);

// "cpu 8.1 s of 9.0 s": the resource busiest in a simulated pipeline.
std::string bounding_resource(const PipelineResult& r);

// Adds AC-offload host bytes, FSDP, expert- and context-parallel traffic and the training-step
// terms to p (docs/planner.md section 8). Its GPU bytes are the step timeline's
// (runtime_memory.h), under either runtime.
struct CandidateContext;
void add_workload_terms(const ModelSpec& spec, const ParamInventory& inv,
                        const CandidateContext& cc, const ChunkPlan& plan,
                        const OptimizerPhases& opt, Prediction& p);

}  // namespace muonplan
