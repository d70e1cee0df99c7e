// The combinations prime-rl main refuses (prime_rl.h): the rule, and the search's view of it.
#include "muonplan/planner/prime_rl.h"

namespace muonplan {

std::string prime_rl_cannot_run(OffloadMode offload, OptimizerKind optimizer,
                                const Layout& layout) {
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
  std::string cannot_run(OffloadMode offload, OptimizerKind optimizer,
                         const Layout& layout) const override {
    return prime_rl_cannot_run(offload, optimizer, layout);
  }
};

}  // namespace

const RuntimeRules& prime_rl_rules() {
  static const PrimeRlRules rules;
  return rules;
}

}  // namespace muonplan
