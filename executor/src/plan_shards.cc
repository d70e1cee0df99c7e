#include "muonplan/exec/plan_shards.h"

#include <cstdio>

#include "muonplan/exec/fnv1a.h"
#include "muonplan/layout.h"

namespace muonplan::exec {

ShardRange shard_of(const Plan& plan, int tensor, int rank) {
  const ParamTensor& pt = plan.inventory.tensors.at(static_cast<size_t>(tensor));
  const Placement p = place(pt, plan.options.layout, plan.world);
  ShardRange s;
  s.row_elems = pt.numel() / pt.shape[0];
  if (p.kind == Placement::Kind::replicated) {
    s.begin = 0;
    s.end = pt.shape[0];
    s.primary = rank == 0;
  } else {
    const bool stack = p.kind == Placement::Kind::stack_sharded;
    s.primary = stack || rank < p.group_size;
    const Range r = p.local[stack ? rank : rank % p.group_size];
    s.begin = r.begin;
    s.end = r.end;
  }
  return s;
}

std::string plan_fingerprint(const Plan& plan) {
  std::string s = "world=" + std::to_string(plan.world) + ";" + to_string(plan.options.layout) +
                  ";bf16_momentum=" + std::to_string(plan.options.bf16_momentum) + ";";
  for (const ParamTensor& t : plan.inventory.tensors) {
    s += t.name + "[";
    for (int64_t d : t.shape) s += std::to_string(d) + ",";
    s += std::string(to_string(t.rule)) + "];";
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fnv1a64(s)));
  return buf;
}

}  // namespace muonplan::exec
