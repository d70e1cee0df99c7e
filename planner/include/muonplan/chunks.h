// Building the step's chunk list (chunk_plan.h) for a layout and world: Muon batches of
// row-sharded matrices, local Muon work, the AdamW group; owners assigned by a strategy.
#pragma once

#include "muonplan/chunk_plan.h"
#include "muonplan/inventory.h"
#include "muonplan/layout.h"

namespace muonplan {

// Builds chunks for `world` ranks, assigns owners with `strategy`, and computes loads.
// ns_iterations sets the FLOPs the balanced strategy weighs.
ChunkPlan build_chunks(const ParamInventory& inv, bool include_mtp, const Layout& layout, int world,
                       OwnerStrategy strategy, int ns_iterations);

// Bytes rank r (group position) sends for batch `c` with its current owners: exchange 1 sends
// its slices of matrices others own; exchange 2 sends the slices of its own matrix back.
// Zero matrices of the padded strategy count like real ones (they travel).
double batch_bytes_sent(const ParamInventory& inv, const Chunk& c, int group_rank);

}  // namespace muonplan
