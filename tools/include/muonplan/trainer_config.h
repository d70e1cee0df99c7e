// The trainer settings a plan implies, as a TOML fragment a user pastes into a run config
// (`muonplan plan --emit toml`). Keys are named as trainers such as prime-rl name them
// ([model] offload, dp_replicate, cp, ep; [optim] type, lr, mu, bf16_momentum, update_rms,
// newton_schulz_coefficients); every value is read from the plan JSON. [workload] and
// [muonplan] carry the rest of the plan's inputs, so the fragment read back with
// `--trainer-config` (apply_trainer_config, trainer_config_in.h) reproduces the plan.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace muonplan {

// `plan` is plan_to_json's output (or a plan file). Throws nlohmann::json::exception when a
// key the fragment needs is missing.
std::string trainer_config_toml(const nlohmann::json& plan);

}  // namespace muonplan
