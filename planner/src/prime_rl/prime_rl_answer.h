// The answer's keys to change (prime_rl_answer.cc; private to the room, whose front door,
// prime_rl.h, gives the answer itself).
#pragma once

#include <string>
#include <vector>

#include "muonplan/planner/model_spec.h"
#include "muonplan/planner/plan.h"
#include "prime_rl/trainer_config_in.h"

namespace muonplan {

// The keys that turn the config into candidate `c` on `gpus_per_node` GPUs per node (0: the
// written plan's); empty when it is the config as written. Keys are named as prime-rl of
// `date` (--prime-rl-version; "" the newest) names them, or as the file does where it uses
// the older SFT [deployment] names; a key that date lacks says so, and `*inexpressible` (when
// given) says why the file's era has no keys for the candidate ("" when it has).
std::vector<std::string> keys_to_change(const TrainerConfig& tc, const ModelSpec& spec,
                                        const Plan& written, const Candidate& c,
                                        int gpus_per_node = 0, const std::string& date = "",
                                        std::string* inexpressible = nullptr);

}  // namespace muonplan
