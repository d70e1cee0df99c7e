// PyTorch's AdamW as a PyTorch trainer runs it (docs/planner.md section 7): which implementation
// steps the moments, and the HBM bytes per element it moves. One rule for the step timeline's
// temporaries (step_timeline_phases.cc) and the optimizer step's time (chunk_costs.cc).
#pragma once

#include "cost/candidate_context.h"
#include "muonplan/planfile/offload_policy.h"
#include "muonplan/planfile/plan_options.h"

namespace muonplan {

// prime-rl #3305 (2026-08-19, "Turn fused adamw on by default except when we do cpu
// offloading"): optim/__init__.py builds AdamW with fused=True unless the optimizer is offloaded
// (`fused_adamw=config.type == "adamw" and not cpu_offload`). torch's fused AdamW updates each
// tensor in place in one kernel. Before it, and under optim_cpu_offload (the state staged
// whole), torch's default for CUDA tensors: the foreach implementation. Only for a prime-rl
// trainer (Workload::trainer); its date empty is today's prime-rl (trainer_flags.cc).
bool fused_adamw(const PlanOptions& o, const OffloadPolicy& pol);

// Whether the step runs torch's foreach AdamW: the pytorch runtime without fused_adamw.
bool foreach_adamw(const PlanOptions& o, const OffloadPolicy& pol);

// HBM bytes per element of one AdamW step on the GPU. One pass (the muonplan executor's kernel,
// torch's fused AdamW): read the gradient, read and write the master and both moments, G + 2 (M +
// S). torch's foreach AdamW (torch/optim/adam.py, _multi_tensor_adam, decoupled decay) makes a
// pass per op, each reading and writing whole arrays: the decay's _foreach_mul_ on the params
// (when weight decay is not 0: 2 M), _foreach_lerp_ of exp_avg toward the grads (2 m + G),
// _foreach_mul_ and _foreach_addcmul_ on exp_avg_sq (2 v, then 2 v + G), _foreach_sqrt into a
// new array (v + v), _foreach_div_ and _foreach_add_ on it (2 v each) and _foreach_addcdiv_ of
// the params (2 M + m + v): 4 M + 3 m + 11 v + 2 G with the decay, m = v = S / 2 and G = M (FSDP2
// keeps gradients in the parameters' dtype): 80 B fp32, 40 B with bf16 masters and state.
double adamw_step_bytes_per_elem(const PlanOptions& o, const OffloadPolicy& pol,
                                 const ElemBytes& eb);

}  // namespace muonplan
