// What prime-rl (main) can run: the one rule that the trainer answer's alternatives and
// `muonplan plan --emit prime-rl` share, so the emit never writes a config that differs from
// its plan (prime-rl's trainer config, docs/trainer-config.md: full_offload accepts only AdamW
// and SignSGD; ep needs ep % cp == 0).
#pragma once

#include <string>

#include "muonplan/planfile/plan_options.h"
#include "muonplan/planfile/shards.h"

namespace muonplan {

// Why prime-rl cannot run this combination, the trainer change that would allow it and the
// flags that plan one it can run; "" when it can.
std::string prime_rl_cannot_run(OffloadMode offload, OptimizerKind optimizer, const Layout& layout);

}  // namespace muonplan
