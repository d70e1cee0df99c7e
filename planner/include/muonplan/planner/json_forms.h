// JSON forms the command line prints and the Python bindings return (docs/cli-contract.md): the
// parameter inventory of `muonplan inspect` and the NS cost of `muonplan cost ns`.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "muonplan/planner/inventory.h"
#include "muonplan/planner/ns_model.h"

namespace muonplan {

// params_total, params_muon, params_adamw, params_mtp, muon_matrices, tensors, shape_groups;
// with `tensors`, tensor_list (every tensor: shape, rule, partitions, stack_dim, mtp).
nlohmann::json inventory_to_json(const ParamInventory& inv, bool include_mtp, bool tensors);

// ms, flops, tflops_per_s, normalize_ms, gemm_ms, iterations, gemms_per_iteration.
nlohmann::json ns_cost_to_json(const NsCost& cost);

// InputError "--batch|--rows|--cols: must be positive, got N" unless all are positive.
void check_ns_shape(int64_t batch, int64_t rows, int64_t cols);

}  // namespace muonplan
