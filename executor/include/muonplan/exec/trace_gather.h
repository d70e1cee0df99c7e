// The measured step's trace: every rank's stages merged on rank 0 (trace.h, docs/report.md).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "muonplan/exec/backend.h"
#include "muonplan/exec/communicator.h"
#include "muonplan/planfile/trace.h"

namespace muonplan::exec {

// Collective: every rank passes its stages; rank 0 gets the merged trace, one process (pid)
// per rank named "rank R", the other ranks null. Goes through the step's own all-to-all, so
// the buffers are backend memory (device memory under NCCL).
nlohmann::json gather_trace(const std::vector<TraceEvent>& mine, Backend& backend,
                            Communicator& comm);

}  // namespace muonplan::exec
