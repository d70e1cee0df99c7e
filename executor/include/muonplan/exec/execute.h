// Running a Plan: K optimizer steps of MuonStep on this rank with deterministic weights and
// gradients, measured the way the planner predicts (metrics JSON, docs/cli-contract.md), optionally
// checked against an unsharded recomputation, checkpointed and resumed.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "muonplan/exec/backend.h"
#include "muonplan/exec/communicator.h"
#include "muonplan/exec/plan_shards.h"  // plan_fingerprint
#include "muonplan/planfile/plan_file.h"

namespace muonplan::exec {

struct ExecuteOptions {
  int64_t steps = 1;
  bool check_reference = false;
  std::string checkpoint_dir;   // save after the last step when set
  std::string resume_dir;       // load before the first step when set
  bool skip_nonfinite = false;  // skip a step whose gradients hold NaN/Inf instead of failing
  bool symmetric_ns = false;    // the symmetric-product NS variant (newton_schulz.h)
  bool trace = false;           // record the last step's stages (ExecuteResult::trace)
  // Test hook: poison one element of this tensor's gradient at this step ("" = never).
  std::string inject_nonfinite_tensor;
  int64_t inject_nonfinite_step = 0;
  // Called on every rank after each step (or skipped step): steps done of `total` this run,
  // and that step's seconds (0 for a skipped one). The CLI prints progress from it on rank 0.
  std::function<void(int64_t done, int64_t total, double step_s)> on_step;
};

struct ExecuteResult {
  nlohmann::json metrics;  // the same on every rank after the collectives
  int64_t last_step = 0;
  // With options.trace, on rank 0: the last step's stages on every rank as trace-event JSON
  // (trace.h); null elsewhere.
  nlohmann::json trace;
};

// Throws InputError for a plan that cannot run here (world size, optimizer), and
// std::runtime_error for a failure during the run; either the same on every rank.
ExecuteResult execute(const Plan& plan, const ExecuteOptions& options, Backend& backend,
                      Communicator& comm);

}  // namespace muonplan::exec
