// The trainer-config answer (prime_rl.h) as text for `muonplan plan` and as the
// "trainer_config" object of its --json (docs/cli-contract.md).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "muonplan/planner/prime_rl.h"

namespace muonplan {

std::string trainer_answer_text(const PlanInputs& in, const TrainerAnswer& a, const Plan& written,
                                bool explain);
nlohmann::json trainer_answer_json(const PlanInputs& in, const TrainerAnswer& a,
                                   const Plan& written);

}  // namespace muonplan
