#include "muonplan/planfile/chunk_plan.h"

#include <algorithm>
#include <numeric>
#include <tuple>

#include "muonplan/base/error.h"

namespace muonplan {

OwnerStrategy parse_owner_strategy(const std::string& name) {
  return parse_enum(kOwnerStrategyNames, name, "--owners");
}

const char* to_string(OwnerStrategy s) {
  return enum_name(kOwnerStrategyNames, s);
}

const char* Chunk::kind_name(Kind kind) {
  return enum_name(kChunkKindNames, kind);
}

double RankLoads::max_bytes() const {
  return alltoall_bytes.empty() ? 0
                                : *std::max_element(alltoall_bytes.begin(), alltoall_bytes.end());
}
double RankLoads::max_flops() const {
  return ns_flops.empty() ? 0 : *std::max_element(ns_flops.begin(), ns_flops.end());
}
double RankLoads::total_bytes() const {
  return std::accumulate(alltoall_bytes.begin(), alltoall_bytes.end(), 0.0);
}
double RankLoads::total_flops() const {
  return std::accumulate(ns_flops.begin(), ns_flops.end(), 0.0);
}

int64_t LocalCounts::at(int rank) const {
  if (!stacked) return 1;
  return ShardRule{ShardRule::Kind::stack_sharded, 1, ep, dp}.range(entries, rank).size();
}

int64_t LocalCounts::max() const {
  if (!stacked) return 1;
  // The first slice of a torch.chunk split is the largest, at both levels.
  return chunk_range(chunk_range(entries, ep, 0).size(), dp, 0).size();
}

bool LocalCounts::operator<(const LocalCounts& o) const {
  return std::tie(stacked, entries, ep, dp) < std::tie(o.stacked, o.entries, o.ep, o.dp);
}

}  // namespace muonplan
