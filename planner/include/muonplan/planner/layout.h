// Training layout and parameter placements (docs/muon-step.md section 4). Ranks are numbered
// node-major: rank = node * gpus_per_node + local GPU. FSDP groups are contiguous runs of
// `fsdp` ranks; expert parallelism is innermost (ep_rank = rank % ep), as in torchtitan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "muonplan/planfile/shards.h"
#include "muonplan/planner/inventory.h"

namespace muonplan {

// "fsdp=8,cp=1,ep=8" (any subset, any order). Throws InputError on bad text.
Layout parse_layout(const std::string& text);

// The layout with defaults filled in for `world` ranks; InputError if it does not divide.
Layout resolve_layout(const Layout& layout, int world, const ModelSpec& spec);

// Where one parameter tensor lives.
struct Placement {
  using Kind = ShardRule::Kind;
  Kind kind = Kind::row_sharded;
  int group_size = 1;  // ranks in the shard group (fsdp, or world for expert stacks)
  // Per rank of the world: rows (row_sharded) or stack entries (stack_sharded) it holds.
  std::vector<Range> local;
};

// Placement of tensor t over `world` ranks. Row-sharded tensors use the group containing
// `rank`; all groups of a replicated FSDP layout (HSDP) are alike, so the placement describes
// group 0 and local[] is indexed by the rank's position in its group.
Placement place(const ParamTensor& t, const Layout& layout, int world);

// One rank's entry of place(t, layout, world).local in O(1), without the per-rank table: what
// the planner's loops over ranks use, so a large world costs no table per tensor. `rank` is a
// world rank for expert stacks and a group position otherwise.
Range local_range(const ParamTensor& t, const Layout& layout, int world, int rank);

// place(t, layout, world).kind is shard_kind(t, layout), and the plan file's tensors[].shard
// is shard_rule(t, layout, world) (shards.h): the rule is stated there, once.

}  // namespace muonplan
