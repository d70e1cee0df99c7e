#include "muonplan/exec/plan_shards.h"

#include <cstdio>

#include "muonplan/exec/fnv1a.h"

namespace muonplan::exec {

ShardRange shard_of(const Plan& plan, int tensor, int rank) {
  const ParamTensor& pt = plan.inventory.tensors.at(static_cast<size_t>(tensor));
  const ShardRule& rule = plan.shards.at(static_cast<size_t>(tensor));
  const Range r = rule.range(pt.shape[0], rank);
  ShardRange s;
  s.row_elems = pt.numel() / pt.shape[0];
  s.begin = r.begin;
  s.end = r.end;
  s.primary = rule.primary(rank);
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
