// The training workload the plan flags describe (to_plan_request's part; plan_request.cc).
#pragma once

#include <optional>

#include "muonplan/planner/plan_request.h"

namespace muonplan::detail {

// --workload FILE, or --tokens-per-step, --seq-len and their companions, with --ac selective's
// targets and freq, --trainer, --expert-load, --attention and the dtypes; nullopt: the optimizer
// step only. InputError naming the flag on a bad or contradictory value.
std::optional<Workload> workload_from_flags(const PlanFlags& f);

}  // namespace muonplan::detail
