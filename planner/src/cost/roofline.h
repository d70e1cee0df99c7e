// The training step's compute from each operation's roofline (internal to the cost model;
// docs/planner.md section 8, "Roofline"): per decoder layer and pass (forward, the recompute of
// full or selective AC (ac_layers.h), backward) every GEMM with its real shape, causal attention at
// its kernel's published throughput, the elementwise and MoE routing passes by their bytes, the LM
// head, and fixed costs per layer. Time per operation = max(FLOPs / (peak x efficiency), bytes /
// HBM bandwidth).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "muonplan/planner/cost_model.h"

namespace muonplan {

// What the roofline reads of the step's shape on one layout.
struct RooflineShape {
  double t = 0;        // tokens per rank per micro step
  double n_micro = 0;  // micro steps per step
  double seq_len = 0, seqs_per_micro = 0;
  int cp = 1, ep = 1, fsdp = 1, gpn = 1;
  double heads_q = 0, heads_kv = 0, qk = 0, v = 0;  // attention shape (heads_of)
};

// The attention kernel's throughput, as fractions of the GPU's dense bf16 peak, from the
// kernel's published benchmarks (docs/planner.md, "Attention kernels").
struct AttentionRate {
  const char* kernel = "";                          // "FlashAttention-3", ...
  AttentionKernel resolved = AttentionKernel::fa2;  // fa2, fa3 or sdpa (never auto)
  double forward = 0, backward = 0;
  const char* source = "";
};
// `auto` as prime-rl picks: FA3 on SM90, FA2 elsewhere. InputError naming --attention for FA3
// on a GPU whose compute capability is known and not 9.x (FA3 is Hopper-only).
AttentionRate attention_rate(AttentionKernel kernel, double compute_capability);
// The fitted fraction of a kernel's published throughput the trainer reaches on this GPU kind
// (calibration.attention_{fa2,fa3,sdpa}_efficiency).
double attention_efficiency(const Calibration& cal, AttentionKernel resolved);

struct RooflineStep {
  std::vector<Term> terms;               // per operation class, the whole step (seconds)
  std::map<int64_t, double> unit_s;      // per FSDP unit (-1: root), one micro step, all passes
  std::map<int64_t, double> unit_bwd_s;  // the same, backward (with its recompute) only
  double compute_s = 0;                  // sum of terms
  double attention_s = 0;                // attention's share (hides ring CP hops)
};

struct CandidateContext;
RooflineStep roofline_step(const ModelSpec& s, const ParamInventory& inv,
                           const CandidateContext& cand, const RooflineShape& sh);

}  // namespace muonplan
