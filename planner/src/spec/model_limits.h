// Bounds on model sizes, checked while loading so that a typo (a million layers, 10^15
// experts) is refused with a located message before anything large is allocated or an
// element count overflows.
#pragma once

#include <cstdint>
#include <string>

#include "muonplan/base/units.h"
#include "muonplan/planner/model_spec.h"

namespace muonplan::detail {

// The largest value muonplan accepts for a size field (names as in our YAML and HF configs).
int64_t max_size_for(const std::string& key);

// Refuses specs whose parameter count or tensor count is beyond what the planner is for
// (1e15 parameters, 2e6 tensors), or with a tensor dimension past kMaxTensorDim; InputError
// naming the file.
void check_model_totals(const ModelSpec& spec, const std::string& path);

}  // namespace muonplan::detail
