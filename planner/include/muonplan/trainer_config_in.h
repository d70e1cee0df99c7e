// `muonplan plan --trainer-config FILE`: the TOML fragment `--emit toml` writes
// (trainer_config_toml, trainer_config.h in the tools library), read back into plan flags.
#pragma once

#include <string>

#include "muonplan/plan_request.h"

namespace muonplan {

// Reads a TOML file of the keys trainer_config_toml writes (the TOML subset it writes:
// tables, key = string / integer / float / bool / array) into `flags` through set_plan_flag.
// A flag still at its default (PlanFlags{}) takes the file's value; one given otherwise must
// equal it. Keys derived from others (world_size, dp_replicate, *_cpu_offload) are checked,
// not applied. InputError "FILE:LINE:COL: table.key: ..." for a bad file, "--FLAG: conflicts
// with FILE:LINE (key = value)" for a contradicting flag (docs/planner.md, "Trainer config
// in").
void apply_trainer_config(const std::string& path, PlanFlags& flags);

}  // namespace muonplan
