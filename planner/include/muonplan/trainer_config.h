// The trainer settings a plan implies, as a TOML fragment a user pastes into a run config
// (`muonplan plan --emit toml`). Keys are named as trainers such as prime-rl name them
// ([model] offload, dp_replicate, cp, ep; [optim] type, lr, mu, bf16_momentum, update_rms,
// newton_schulz_coefficients); every value is read from the plan JSON. [workload] and
// [muonplan] carry the rest of the plan's inputs, so the fragment read back with
// `--trainer-config` (apply_trainer_config) reproduces the plan.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "muonplan/plan_request.h"

namespace muonplan {

// `plan` is plan_to_json's output (or a plan file). Throws nlohmann::json::exception when a
// key the fragment needs is missing.
std::string trainer_config_toml(const nlohmann::json& plan);

// Reads a TOML file of the keys trainer_config_toml writes (the TOML subset it writes:
// tables, key = string / integer / float / bool / array) into `flags` through set_plan_flag.
// A flag still at its default (PlanFlags{}) takes the file's value; one given otherwise must
// equal it. Keys derived from others (world_size, dp_replicate, *_cpu_offload) are checked,
// not applied. InputError "FILE:LINE:COL: table.key: ..." for a bad file, "--FLAG: conflicts
// with FILE:LINE (key = value)" for a contradicting flag (docs/planner.md, "Trainer config
// in").
void apply_trainer_config(const std::string& path, PlanFlags& flags);

}  // namespace muonplan
