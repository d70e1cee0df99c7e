// Forward/backward terms of a training workload (internal to the cost model).
#pragma once

#include "muonplan/cost_model.h"

namespace muonplan {

// Adds activation, gathered-weight and logits bytes, AC-offload host bytes, FSDP traffic and
// the training-step time to p. local_params: elements the busiest rank holds.
void add_workload_terms(const ModelSpec& spec, const ParamInventory& inv, const Topology& topo,
                        const PlanOptions& o, const ChunkPlan& plan, double local_params,
                        Prediction& p);

}  // namespace muonplan
