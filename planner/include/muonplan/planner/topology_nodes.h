// The one bound on a node count given for a topology: 1..max_nodes. `plan --nodes N`,
// `topology --nodes N` and the device graph refuse a count outside it in the same words.
#pragma once

#include <cstdint>
#include <string>

#include "muonplan/planfile/topology_spec.h"

namespace muonplan {

// Throws InputError ("FIELD: must be between 1 and max_nodes (M) of topology T, got N").
void check_node_count(int64_t nodes, const Topology& topology, const std::string& field);

}  // namespace muonplan
