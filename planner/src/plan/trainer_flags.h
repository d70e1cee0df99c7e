// --trainer, --prime-rl-version and --expert-load onto a workload (docs/planner.md section 8,
// "The trainer's host work" and "MoE routing").
#pragma once

#include <string>
#include <vector>

#include "muonplan/planner/plan_request.h"

namespace muonplan::detail {

// Sets w.trainer, w.prime_rl_date (the date --prime-rl-version gives, else the newest prime-rl
// the version table knows) and w.expert_load. InputError naming the flag on a bad value.
void apply_trainer_flags(const PlanFlags& f, Workload& w);

// Tokens per expert from a file: numbers separated by white space or commas, `#` comments.
// InputError naming --expert-load when unreadable, empty, negative or all zero.
std::vector<double> read_expert_load(const std::string& path);

}  // namespace muonplan::detail
