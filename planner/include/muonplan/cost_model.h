// The cost model: every predicted figure is a sum of named terms (docs/planner.md), so a plan
// can explain itself. Bytes are per GPU (rank) or per node as the name says; the figures for a
// rank are for the busiest rank.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "muonplan/chunks.h"
#include "muonplan/inventory.h"
#include "muonplan/plan_options.h"
#include "muonplan/topology.h"

namespace muonplan {

struct Term {
  std::string name;
  double value = 0;     // bytes or seconds, as the list it sits in says
  std::string formula;  // how it was computed, in words a user can check
};

double sum(const std::vector<Term>& terms);

// A chunk's timed stages; resources run one stage at a time, chunks in flight overlap.
enum class Resource { gpu, network, pcie_h2d, pcie_d2h, cpu };
const char* to_string(Resource r);
// When a stage can run in a training step: in the optimizer step after backward, during
// backward (full offload: gradients to the host, the host fold and host updates), or as the
// weight upload of host-updated params after backward.
enum class StagePhase { optimizer, backward, weight_upload };
struct Stage {
  Resource resource;
  double seconds = 0;
  std::string what;
  StagePhase phase = StagePhase::optimizer;
};

// When the simulator ran one stage: the schedule a trace draws (trace.h).
struct StageSpan {
  int chunk = 0;  // index into the chunk list
  int stage = 0;  // index into the chunk's stages
  Resource resource = Resource::gpu;
  std::string what;  // the stage's name (Stage::what)
  double start_s = 0, end_s = 0;
};

struct PipelineResult {
  double makespan_s = 0;
  std::vector<double> busy_s;    // per Resource: total stage time
  std::vector<StageSpan> spans;  // every stage, in the order the simulator ran them
};
// Runs chunks (each a stage sequence) with at most `depth` in flight, in order, each
// resource serving one stage at a time (earliest-ready first).
PipelineResult simulate_pipeline(const std::vector<std::vector<Stage>>& chunks, int depth);

struct Prediction {
  // Per GPU, busiest rank.
  std::vector<Term> gpu_persistent_bytes;
  std::vector<Term> gpu_transient_bytes;
  std::vector<Term> gpu_fixed_bytes;
  std::vector<Term> gpu_workload_bytes;  // with a workload only
  // Per node, busiest node.
  std::vector<Term> host_bytes_per_node;
  // Per GPU per step.
  double alltoall_bytes_per_rank_max = 0;
  double h2d_bytes_per_gpu = 0;
  double d2h_bytes_per_gpu = 0;
  std::vector<Term> comm_bytes;  // named traffic per GPU per step (all-to-all, H2D, D2H, FSDP)
  // Optimizer step: per-resource busy time and the pipelined total.
  std::vector<Term> step_phases_s;
  double optimizer_step_s = 0;
  // The optimizer step's schedule as simulated (after the whole-state H2D when staged whole).
  std::vector<StageSpan> schedule;
  std::optional<double> training_step_s;
  std::vector<Term> training_terms_s;   // their sum is training_step_s
  std::vector<Term> training_hidden_s;  // work that runs under compute (not in the sum)
  // Limits in force.
  double gpu_limit_bytes = 0;
  double host_limit_bytes = 0;

  double gpu_peak_bytes() const;
  double gpu_transient_bytes_total() const { return sum(gpu_transient_bytes); }
  double host_bytes() const { return sum(host_bytes_per_node); }
  bool fits() const;
  double step_s() const { return training_step_s.value_or(optimizer_step_s); }
};

// Predicts one candidate. `chunks` must come from build_chunks for the same layout and world.
Prediction predict(const ModelSpec& spec, const ParamInventory& inv, const Topology& topo,
                   const PlanOptions& opts, const ChunkPlan& chunks);

}  // namespace muonplan
