#include "muonplan/planfile/shards.h"

#include "muonplan/planfile/param_inventory.h"

#include <algorithm>

namespace muonplan {

std::string to_string(const Layout& layout) {
  return "fsdp=" + std::to_string(layout.fsdp) + ",cp=" + std::to_string(layout.cp) +
         ",ep=" + std::to_string(layout.ep);
}

Range ShardRule::range(int64_t n, int rank) const {
  switch (kind) {
    case Kind::row_sharded:
      return chunk_range(n, group_size, rank % group_size);
    case Kind::stack_sharded: {
      // Whole entries: split over the ep ranks, then over the dp ranks sharing an ep slice, in
      // each shard group of ep x dp ranks alike (HSDP's replicas hold the same entries).
      const int in_group = rank % (ep * dp);
      const Range slice = chunk_range(n, ep, in_group % ep);
      const Range sub = chunk_range(slice.size(), dp, in_group / ep);
      return {slice.begin + sub.begin, slice.begin + sub.end};
    }
    case Kind::replicated:
      break;
  }
  return {0, n};
}

bool ShardRule::primary(int rank) const {
  switch (kind) {
    case Kind::row_sharded:
      return rank < group_size;
    case Kind::stack_sharded:
      return rank < ep * dp;
    case Kind::replicated:
      break;
  }
  return rank == 0;
}

ShardRule::Kind shard_kind(const ParamTensor& t, const Layout& layout) {
  if (t.stack_dim == 0) return ShardRule::Kind::stack_sharded;
  return layout.fsdp == 1 ? ShardRule::Kind::replicated : ShardRule::Kind::row_sharded;
}

ShardRule shard_rule(const ParamTensor& t, const Layout& layout, int world) {
  ShardRule r;
  r.kind = shard_kind(t, layout);
  if (r.kind == ShardRule::Kind::row_sharded) r.group_size = layout.fsdp;
  if (r.kind == ShardRule::Kind::stack_sharded) {
    r.ep = layout.ep;
    // prime-rl's mesh: the experts' FSDP group is dp_shard_cp / ep, inside the shard group;
    // the dp_replicate groups (world / fsdp) each hold every expert.
    r.dp = (layout.fsdp > 0 ? layout.fsdp : world) / layout.ep;
  }
  return r;
}

}  // namespace muonplan
