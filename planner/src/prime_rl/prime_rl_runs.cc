// The combinations prime-rl refuses (prime_rl_rules.h): the rule, and the search's view of it.
#include <algorithm>

#include "prime_rl/prime_rl_rules.h"
#include "prime_rl/trainer_config_in.h"
#include "prime_rl/trainer_keys.h"

namespace muonplan {

std::string prime_rl_cannot_run(OffloadMode offload, OptimizerKind optimizer, const Layout& layout,
                                const std::string& version) {
  // full_offload's era in the key table (prime_rl_versions.cc): before it, prime-rl has no key
  // that keeps the master weights and gradients in host RAM.
  if (offload == OffloadMode::full && !version.empty() &&
      prime_rl_key_on("model", "full_offload", false, version).empty()) {
    return "full offload: prime-rl of " + version +
           " has no [trainer.model] full_offload (it came with b8d9553c0, #3234, on "
           "2026-08-15: --prime-rl-version 2026-08-15 or later runs it); plan with --offload "
           "optimizer or --offload none";
  }
  // prime-rl's full_offload runs the step on the CPU per chunk during backward with its own
  // AdamW/SignSGD kernels; it refuses Muon, and no other key keeps Muon's state in host RAM
  // through backward.
  if (offload == OffloadMode::full && optimizer == OptimizerKind::muon) {
    return "Muon under full offload: prime-rl's full_offload accepts only adamw and sign_sgd "
           "(it would run once full_offload's CPU step supports Muon's Newton-Schulz update); "
           "plan with --offload optimizer or --offload none, or with --optimizer adamw";
  }
  if (layout.ep != 1 && layout.ep % layout.cp != 0) {
    return "ep=" + std::to_string(layout.ep) + " with cp=" + std::to_string(layout.cp) +
           ": prime-rl needs ep % cp == 0 (it would run once its expert mesh no longer folds cp "
           "into ep); plan with --layout giving ep a multiple of cp, or ep=1";
  }
  return "";
}

namespace {

class PrimeRlRules final : public RuntimeRules {
 public:
  explicit PrimeRlRules(std::string version) : version_(std::move(version)) {}
  std::string cannot_run(OffloadMode offload, OptimizerKind optimizer,
                         const Layout& layout) const override {
    return prime_rl_cannot_run(offload, optimizer, layout, version_);
  }
  // prime-rl's ep = "auto" (parallel_dims.py resolve_ep): the largest ep up to 8 that divides
  // the expert count and the FSDP island (world / dp_replicate) and is a multiple of cp.
  int default_ep(const ModelSpec& spec, int fsdp, int cp) const override {
    const int experts = static_cast<int>(spec.moe.num_experts);
    for (int ep = std::min(experts, 8); ep > 1; --ep) {
      if (experts % ep == 0 && fsdp % ep == 0 && ep % cp == 0) return ep;
    }
    return 1;
  }

 private:
  std::string version_;
};

}  // namespace

const RuntimeRules& prime_rl_rules() {
  static const PrimeRlRules rules("");
  return rules;
}

std::shared_ptr<const RuntimeRules> prime_rl_rules_on(const std::string& version) {
  check_prime_rl_version(version);
  return std::make_shared<PrimeRlRules>(version);
}

}  // namespace muonplan
