// The step as a fixed list of chunks (docs/muon-step.md section 4): Muon batches of row-sharded
// matrices exchanged with their owners, local Muon work (expert stacks, replicated matrices),
// and the AdamW group. Plan-file data: the planner builds it (chunks.h), the executor runs it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "muonplan/base/enum_names.h"
#include "muonplan/planfile/param_inventory.h"
#include "muonplan/planfile/shards.h"

namespace muonplan {

enum class OwnerStrategy { padded, restart, round_robin, balanced };
inline constexpr EnumName<OwnerStrategy> kOwnerStrategyNames[] = {
    {OwnerStrategy::padded, "padded"},
    {OwnerStrategy::restart, "restart"},
    {OwnerStrategy::round_robin, "round-robin"},
    {OwnerStrategy::balanced, "balanced"}};
OwnerStrategy parse_owner_strategy(const std::string& name);  // InputError on unknown
const char* to_string(OwnerStrategy s);

// One matrix Muon orthogonalizes: a partition of a tensor (of one stack entry).
struct MatrixRef {
  int tensor = 0;          // index into ParamInventory::tensors
  int partition = 0;       // index into the tensor's muon_partitions()
  int64_t row_offset = 0;  // the partition's first row within the tensor
  int64_t rows = 0, cols = 0;
};

// Matrices of a muon_local chunk on each world rank, kept as the rule that places them rather
// than a per-rank table (180 chunks x 131072 ranks would be 190 MB): a replicated matrix is
// once on every rank; an expert stack's `entries` split over `ep` ranks (ep_rank = rank % ep)
// and each ep slice again over the `dp` ranks sharing it, torch.chunk style both times
// (layout.h). The plan file carries these fields, so the executor evaluates the rule it reads.
struct LocalCounts {
  bool stacked = false;
  int64_t entries = 1;
  int ep = 1, dp = 1;
  int64_t at(int rank) const;  // matrices on world rank `rank`
  int64_t max() const;         // on the busiest rank
  bool operator==(const LocalCounts& o) const {
    return stacked == o.stacked && entries == o.entries && ep == o.ep && dp == o.dp;
  }
  bool operator<(const LocalCounts& o) const;  // distinct rules as map keys
};

struct Chunk {
  enum class Kind { muon_batch, muon_local, adamw_group } kind = Kind::muon_batch;
  int64_t rows = 0, cols = 0;       // matrix shape (Muon chunks)
  std::vector<MatrixRef> matrices;  // muon_batch: batch members; muon_local: one per tensor
  std::vector<int> owners;          // muon_batch: group-relative owner of matrices[k]
  int padding = 0;                  // muon_batch, padded strategy: zero matrices added
  int group_size = 1;               // shard-group size (muon_batch)
  LocalCounts local;                // muon_local: matrices per world rank
  // Predicted NS time of the chunk on its busiest rank (muon chunks; the planner's cost model
  // fills it, the plan file carries it as predicted_ns_ms).
  double predicted_ns_s = 0;
  int64_t params = 0;  // elements updated by this chunk, whole model
  std::vector<std::string> param_names;

  static const char* kind_name(Kind kind);  // kChunkKindNames' name
};
inline constexpr EnumName<Chunk::Kind> kChunkKindNames[] = {
    {Chunk::Kind::muon_batch, "muon_batch"},
    {Chunk::Kind::muon_local, "muon_local"},
    {Chunk::Kind::adamw_group, "adamw_group"}};

// Per-rank loads of a chunk list, indexed by group position (muon batches) or world rank
// (local work): what owners decide, and what the balanced strategy evens out.
struct RankLoads {
  std::vector<double> alltoall_bytes;  // bytes this rank sends in both exchanges, whole step
  std::vector<double> ns_flops;        // NS FLOPs this rank runs, whole step (local included)
  double max_bytes() const;
  double max_flops() const;
  double total_bytes() const;
  double total_flops() const;
};

struct ChunkPlan {
  std::vector<Chunk> chunks;
  OwnerStrategy owners = OwnerStrategy::balanced;
  int world = 1;
  Layout layout;
  RankLoads loads;  // per world rank
};

}  // namespace muonplan
