// The emit's check (prime_rl_emit_check.h), on the rule the trainer answer uses (prime_rl_runs.h).
#include "muonplan/prime_rl_emit_check.h"

#include <stdexcept>

#include "muonplan/base/enum_names.h"
#include "muonplan/base/error.h"
#include "muonplan/prime_rl_runs.h"

namespace muonplan {

void check_prime_rl_runs(const nlohmann::json& plan) {
  const nlohmann::json& l = plan.at("layout");
  Layout layout;
  layout.fsdp = l.at("fsdp");
  layout.cp = l.at("cp");
  layout.ep = l.at("ep");
  const auto offload = enum_from_name(kOffloadModeNames, plan.at("offload").get<std::string>());
  const auto optimizer = enum_from_name(kOptimizerNames, plan.at("optimizer").get<std::string>());
  if (!offload || !optimizer) throw std::runtime_error("plan JSON: unknown offload or optimizer");
  const std::string why = prime_rl_cannot_run(*offload, *optimizer, layout);
  if (why.empty()) return;
  throw InputError({}, "--emit",
                   "prime-rl cannot run this plan (" + std::to_string(plan.at("nodes").get<int>()) +
                       " node(s), offload " + plan.at("offload").get<std::string>() +
                       ", optimizer " + plan.at("optimizer").get<std::string>() + "): " + why +
                       "; no config written, since prime-rl would run it otherwise than planned");
}

}  // namespace muonplan
