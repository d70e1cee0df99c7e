// What a target runtime can run (docs/trainer-config.md, "The answer"): the rules a trainer
// applies to a candidate before it would start, asked by the alternatives' sweep
// (alternatives.h) so that it ranks only what the runtime takes. The planner knows no runtime:
// each one's importer implements this (prime-rl's: prime_rl.h, prime_rl_rules).
#pragma once

#include <string>

#include "muonplan/planfile/plan_options.h"
#include "muonplan/planfile/shards.h"
#include "muonplan/planner/model_spec.h"
#include "muonplan/planner/plan.h"

namespace muonplan {

class RuntimeRules {
 public:
  virtual ~RuntimeRules() = default;
  // Why the runtime cannot run this offload mode with this optimizer on this layout, what would
  // let it and the flags that plan what it can run; "" when it can.
  virtual std::string cannot_run(OffloadMode offload, OptimizerKind optimizer,
                                 const Layout& layout) const = 0;
  // Why the runtime cannot run a trainer over `nodes` nodes (a launcher of one node), what would
  // let it and the flags that plan what it can run; "" when it can.
  virtual std::string cannot_run_nodes(int /*nodes*/) const { return ""; }
  // Whether the runtime takes candidate `c` (evaluated, its nodes, layout and offload mode)
  // with `optimizer`; its fit is decided apart.
  bool takes(const Candidate& c, OptimizerKind optimizer) const;
  // The expert parallelism the runtime picks itself when a layout names none and the search
  // does not enumerate it (PlanRequest::ep_by_runtime), for a shard group of `fsdp` ranks with
  // context parallelism `cp`; 1 by default.
  virtual int default_ep(const ModelSpec& /*spec*/, int /*fsdp*/, int /*cp*/) const { return 1; }
};

// The rules of a runtime that runs every candidate (our executor's).
const RuntimeRules& any_runtime();

}  // namespace muonplan
