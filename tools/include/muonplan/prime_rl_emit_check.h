// `--emit prime-rl` writes only plans prime-rl can run as planned: a config that prime-rl
// would run differently (Muon under full offload becomes no offload there) is refused with the
// reason, the trainer change that would allow it and the flags to re-plan with.
#pragma once

#include <nlohmann/json.hpp>

namespace muonplan {

// `plan` is plan_to_json's output. Throws InputError ("--emit: ...") when prime-rl cannot run it.
void check_prime_rl_runs(const nlohmann::json& plan);

}  // namespace muonplan
