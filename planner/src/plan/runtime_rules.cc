// The runtime rules' shared part and the runtime that takes everything (runtime_rules.h).
#include "muonplan/planner/runtime_rules.h"

#include "muonplan/planner/layout.h"

namespace muonplan {
namespace {

class AnyRuntime final : public RuntimeRules {
 public:
  std::string cannot_run(OffloadMode, OptimizerKind, const Layout&) const override { return ""; }
};

}  // namespace

bool RuntimeRules::takes(const Candidate& c, OptimizerKind optimizer) const {
  if (!c.evaluated) return false;
  return cannot_run_nodes(c.nodes).empty() &&
         cannot_run(c.offload, optimizer, parse_layout(c.layout)).empty();
}

const RuntimeRules& any_runtime() {
  static const AnyRuntime rules;
  return rules;
}

}  // namespace muonplan
