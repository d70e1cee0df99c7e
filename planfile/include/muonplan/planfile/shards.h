// Where each parameter tensor's rows sit over the ranks, as the plan file states it: the
// layout, and per tensor a shard rule (tensors[].shard, docs/cli-contract.md) that the executor
// evaluates instead of re-deriving placement. Ranks are numbered node-major; FSDP groups are
// contiguous runs of `group_size` ranks; expert parallelism is innermost (ep_rank = rank % ep).
#pragma once

#include <cstdint>
#include <string>

#include "muonplan/base/enum_names.h"

namespace muonplan {

struct Layout {
  int fsdp = 0;  // shard-group size for non-expert params, CP included; 0: the whole world
  int cp = 1;    // context parallel (divides the sequence; its ranks are inside fsdp)
  int ep = 1;    // expert parallel
};

std::string to_string(const Layout& layout);  // "fsdp=F,cp=C,ep=E"

// torch.chunk / FSDP2 split of n items over k shards: shard i gets [begin, end), the first
// shards ceil(n/k) each, trailing shards fewer or none.
struct Range {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};
// Inline: the cost model calls it once per matrix and holder, the search's inner loop.
inline Range chunk_range(int64_t n, int k, int i) {
  const int64_t per = (n + k - 1) / k;
  const int64_t begin = per * i < n ? per * i : n;
  return {begin, begin + per < n ? begin + per : n};
}

// One tensor's placement as a rule of a few numbers (a per-rank table would be 131072 entries):
//   row_sharded:   dim 0 split over the `group_size` ranks of each shard group, rank r holding
//                  chunk_range(n, group_size, r % group_size); the first group's copy is primary.
//   stack_sharded: whole stack entries split over `ep` ranks (ep_rank = r % ep), each slice
//                  again over the `dp` ranks sharing it ((r % (ep * dp)) / ep), in each shard
//                  group of ep x dp = fsdp ranks alike: under HSDP every replica group holds
//                  every expert, as prime-rl's (dp_replicate, dp_shard_cp) mesh does; the
//                  first group's copy is primary.
//   replicated:    every rank holds all of dim 0; rank 0's copy is primary.
struct ShardRule {
  enum class Kind { row_sharded, stack_sharded, replicated } kind = Kind::row_sharded;
  int group_size = 1;  // row_sharded
  int ep = 1, dp = 1;  // stack_sharded

  Range range(int64_t n, int rank) const;  // entries of dim 0 (length n) on world rank `rank`
  bool primary(int rank) const;            // whether rank's copy is the one that counts
  bool operator==(const ShardRule& o) const {
    return kind == o.kind && group_size == o.group_size && ep == o.ep && dp == o.dp;
  }
};
inline constexpr EnumName<ShardRule::Kind> kShardKindNames[] = {
    {ShardRule::Kind::row_sharded, "row_sharded"},
    {ShardRule::Kind::stack_sharded, "stack_sharded"},
    {ShardRule::Kind::replicated, "replicated"}};

struct ParamTensor;  // param_inventory.h

// The shard rule, stated once for the planner (place, local_range) and the plan loader, which
// refuses a file whose rule differs: expert stacks are stack_sharded over ep x (fsdp / ep) and
// replicated over the world / fsdp groups (docs/planner.md, "Experts under HSDP");
// other tensors are row_sharded over the fsdp group, or replicated when fsdp is 1.
ShardRule::Kind shard_kind(const ParamTensor& t, const Layout& layout);
ShardRule shard_rule(const ParamTensor& t, const Layout& layout, int world);

}  // namespace muonplan
