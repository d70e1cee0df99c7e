// `--emit prime-rl` writes only plans prime-rl can run as planned: a config that prime-rl
// would run differently (Muon under full offload becomes no offload there) is refused with the
// reason, the trainer change that would allow it and the flags to re-plan with.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace muonplan {

// `plan` is plan_to_json's output. Throws InputError ("--emit: ...") when prime-rl of `date`
// ("" the newest) cannot run it (prime_rl_cannot_run, with the workload's CP inputs; `sft`: the
// SFT trainer's rules, `vlm`: a [model.vlm] model's, `standalone`: a trainer file's, whose
// world is torchrun's) or its node count (prime_rl_cannot_run_nodes).
void check_prime_rl_runs(const nlohmann::json& plan, const std::string& date, bool sft, bool vlm,
                         bool standalone);

// Throws InputError ("--emit: ...") when the plan needs a key prime-rl of `date` (YYYY-MM-DD,
// --prime-rl-version; "" the newest) lacks (the key-era table, prime_rl_key_on): optimizer
// offload before optim_cpu_offload, full offload before full_offload, ulysses before
// cp_style. Without the key, that prime-rl runs the plan's other choice (no offload, ring).
void check_prime_rl_keys_on(const nlohmann::json& plan, const std::string& date, bool sft);

}  // namespace muonplan
