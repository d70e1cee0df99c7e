// The parameter inventory of a model: every tensor with its shape, update rule (docs/muon-step.md
// section 1), matrix partitions and stack dimension (the types: param_inventory.h).
#pragma once

#include "muonplan/planfile/param_inventory.h"
#include "muonplan/planner/model_spec.h"

namespace muonplan {

// Builds the inventory. Expects a validated spec (the loaders validate).
ParamInventory build_inventory(const ModelSpec& spec);

}  // namespace muonplan
