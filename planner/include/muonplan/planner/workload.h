// Planning with a training workload (docs/planner.md, "Workload"): reading its file, and the
// micro steps it implies for a world and layout. The Workload itself is plan-file data
// (plan_options.h).
#pragma once

#include <cstdint>
#include <string>

#include "muonplan/planfile/plan_options.h"

namespace muonplan {

Workload load_workload(const std::string& path);  // YAML: Workload's fields, by name

// Micro steps per optimizer step: sequences per data-parallel group (world / cp) over
// micro_batch_seqs. InputError naming --tokens-per-step when they do not divide, --layout when
// cp does not divide the sequence (workload_cost.cc).
int64_t micro_steps(const Workload& w, int world, const Layout& layout);

// The kernel `auto` runs, as prime-rl picks it: FlashAttention-3 on compute capability 9.x,
// FlashAttention-2 elsewhere (and when unknown, 0); any other kernel as given.
AttentionKernel resolved_attention_kernel(AttentionKernel kernel, double compute_capability);

}  // namespace muonplan
