// Gradient clipping's work on one rank (grad_clip.h), counted the way torch runs it.
#include "cost/grad_clip.h"

#include <algorithm>
#include <cmath>

#include "cost/roofline_ops.h"
#include "muonplan/planner/workload.h"

namespace muonplan {

using namespace roofline_ops;  // kClipGradPasses, the foreach limits

GradClipWork grad_clip_work(const ParamInventory& inv, const PlanOptions& o, int fsdp, int ep) {
  GradClipWork w;
  if (!o.workload || o.workload->trainer.empty() || o.offload == OffloadMode::full) return w;
  // Per norm group (under EP: the expert stacks, then the rest; else one), its tensors and the
  // 65536-element chunks of their shards.
  const bool split = ep > 1;
  double elems = 0, tensors[2]{}, chunks[2]{};
  inv.for_each_weight([&](const ParamTensor& pt, bool trained) {
    if (!trained || (pt.mtp && !o.include_mtp)) return;
    const double share = double(pt.numel()) / fsdp;  // the rank's shard (workload_cost.cc)
    const int g = split && pt.is_expert() ? 1 : 0;
    elems += share;
    tensors[g] += 1;
    chunks[g] += std::ceil(share / kForeachChunkElems);
  });
  // Each group's norm and multiply in foreach launches of at most 110 tensors and 320 chunks;
  // per group the norm's small ops and its all-reduce.
  for (int g = 0; g < 2; ++g) {
    if (tensors[g] == 0) continue;
    const double per_pass = std::max(std::ceil(tensors[g] / kForeachMaxTensors),
                                     std::ceil(chunks[g] / kForeachMaxBlocks));
    w.launches += 2 * per_pass + kClipScalarOps;
    w.collectives += 1;
  }
  w.bytes = kClipGradPasses * double(o.master_bytes()) * elems;
  return w;
}

}  // namespace muonplan
