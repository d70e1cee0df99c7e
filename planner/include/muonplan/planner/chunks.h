// Building the step's chunk list (chunk_plan.h) for a layout and world: Muon batches of
// row-sharded matrices, local Muon work, the AdamW group; owners assigned by a strategy.
#pragma once

#include "muonplan/planfile/chunk_plan.h"
#include "muonplan/planner/inventory.h"
#include "muonplan/planner/layout.h"

namespace muonplan {

// Builds chunks for `world` ranks, assigns owners with `strategy`, and computes loads.
// ns_iterations sets the FLOPs the balanced strategy weighs.
ChunkPlan build_chunks(const ParamInventory& inv, bool include_mtp, const Layout& layout, int world,
                       OwnerStrategy strategy, int ns_iterations);

// Whether build_chunks gives layouts `a` and `b` of one world the same batches, owners and
// loads: a layout reaches them only through its shard groups (fsdp) and the number of expert
// entries each rank holds (LocalCounts::at), so equal groups and equal counts on every rank
// give equal plans. The search tries every ep dividing the world; past the expert count most
// place one entry on each of the first ranks alike, and one owner search serves them all.
bool same_chunking(const ParamInventory& inv, bool include_mtp, const Layout& a, const Layout& b,
                   int world);
// The plan build_chunks gives `layout` where same_chunking(plan.layout, layout) holds: `plan`
// with its layout and its local chunks' placement rules (ep, dp) set to layout's.
ChunkPlan relayout(ChunkPlan plan, const Layout& layout);

// Bytes rank r (group position) sends for batch `c` with its current owners: exchange 1 sends
// its slices of matrices others own; exchange 2 sends the slices of its own matrix back.
// Zero matrices of the padded strategy count like real ones (they travel).
double batch_bytes_sent(const ParamInventory& inv, const Chunk& c, int group_rank);

}  // namespace muonplan
