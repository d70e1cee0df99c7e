// The training workload the plan flags describe (to_plan_request's part; plan_request.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "muonplan/planner/plan_request.h"

namespace muonplan::detail {

// --workload FILE, or --tokens-per-step, --seq-len and their companions, with --ac selective's
// targets and freq, --trainer, --expert-load, --attention and the dtypes; nullopt: the optimizer
// step only. InputError naming the flag on a bad or contradictory value.
std::optional<Workload> workload_from_flags(const PlanFlags& f);

// The one rule of a workload's activation checkpointing, from flags and from a workload file
// alike: `mode` full | selective | none, `targets` (selective only; empty: prime-rl's default,
// norm) and `freq` (AC on every freq-th layer; full or selective only). `fail(field, message)`
// throws, naming the field as its caller spells it (`names`: "--ac" or "ac", ...).
struct AcFieldNames {
  const char *mode, *targets, *freq;
};
void set_workload_ac(
    Workload& w, const std::string& mode, const std::vector<std::string>& targets, int64_t freq,
    const AcFieldNames& names,
    const std::function<void(const char* field, const std::string& message)>& fail);

}  // namespace muonplan::detail
