// Gradient clipping as prime-rl's trainers run it every step, before the optimizer: the work
// on one rank, which the roofline turns into the training step's `grad_clip` term (roofline.cc;
// docs/planner.md section 8). Internal to the cost model.
#pragma once

#include "muonplan/planfile/param_inventory.h"
#include "muonplan/planfile/plan_options.h"

namespace muonplan {

// rl/train.py and sft/train.py call torchtitan's clip_grad_norm_ over model.parameters()
// (optim.max_norm, 1.0 by default; distributed/utils.py): get_total_norm's _foreach_norm reads
// each gradient shard the rank holds, the DTensor norm's full_tensor() all-reduces it over the
// shard group (under EP the expert and the other parameters' norms each), and
// clip_grads_with_norm_'s _foreach_mul_ scales every gradient by the clamped coefficient, always
// (no branch, so no sync; the norm's .item() for the log is trainer_host's). FSDP2 keeps each
// gradient shard in its parameter's dtype, the master's.
struct GradClipWork {
  double bytes = 0;        // HBM bytes: 3 per gradient byte held
  double launches = 0;     // the two foreach passes' launches and the norm's small ops
  double collectives = 0;  // the norm's all-reduces: 1, 2 under EP
};

// Zero work where nothing clips: no prime-rl trainer (the muonplan runtime does not clip),
// --offload full (late-2026 prime-rl turns clipping off under full_offload, configs/trainer.py;
// an earlier GradientOffloadManager normed the host's fp32 accumulators: not modelled), or no
// trained parameter. `fsdp` ranks share each parameter, `ep` > 1 splits the norm in two.
GradClipWork grad_clip_work(const ParamInventory& inv, const PlanOptions& o, int fsdp, int ep);

}  // namespace muonplan
