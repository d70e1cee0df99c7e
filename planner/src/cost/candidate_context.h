// One candidate's context (issue 47 item 1): what every cost file reads about the run it
// prices, built once per candidate (world, layout, offload mode) by candidate_context() and
// read, never worked out again: GPUs per node, the memory limits, the link rates (one Rates,
// with the route's bottleneck), the MoE's top-k, the fused LM head's vocabulary block, and the
// bytes per element of the optimizer's arrays on the device and the host, from the rule the
// executor allocates by (muonplan/planfile/step_buffers.h). Internal to the planner.
#pragma once

#include "cost/step_traffic.h"
#include "muonplan/planner/cost_model.h"

namespace muonplan {

// The rules the context is built by, each stated here once. The search calls the first two
// before it has a candidate (plan/search.cc, plan/search_floor.cc).
int gpus_per_node(const PlanOptions& o, const Topology& topo);  // --gpus-per-node, else the node's
double gpu_limit_bytes(const PlanOptions& o,
                       const Topology& topo);  // --gpu-memory-gib, else the GPU's
double host_limit_bytes(const PlanOptions& o,
                        const Topology& topo);  // --host-ram-gib, else the node's
// Experts each token is routed to (1 for a dense model: its one MLP).
double top_k(const ModelSpec& s);
// prime-rl's fused LM head (lm_head.py) runs the vocabulary in blocks of vocab_chunk_size =
// min(vocab, 8192): its GEMM's width and its temporaries' span.
inline constexpr double kFusedLmHeadVocabBlock = 8192;
double vocab_block(const ModelSpec& s);

// Bytes per element of the optimizer's arrays under the candidate's options: step_buffers.h's
// arrays (elem_bytes, state_elem_bytes) in the optimization dtype. torch makes an optimizer's
// state like its parameter (zeros_like), so a bf16 master has bf16 state, on the GPU or the host.
struct ElemBytes {
  double master = 4;       // optimization_dtype: 4 float32, 2 bfloat16
  double muon_state = 4;   // Muon's momentum (muon_state_bytes)
  double adamw_state = 8;  // AdamW's two moments (adamw_state_bytes); 0 under signSGD
  // Host passes per element after its gradient is read (full offload): the Muon fold reads and
  // writes the momentum (2 x muon_state); a host-updated parameter (AdamW, signSGD) reads and
  // writes its master and state and writes the bf16 copy that goes H2D (2 x (master + state) + 2).
  double host_fold = 8;
  double host_update = 26;
};
ElemBytes elem_bytes_of(const PlanOptions& o);

struct CandidateContext {
  const Topology& topo;
  const PlanOptions& o;  // the candidate's options: its layout and offload mode
  int world = 0;
  int gpus_per_node = 0;
  double gpu_limit_bytes = 0, host_limit_bytes = 0;
  step_cost::Rates rates{};
  double top_k = 1;        // routed experts per token
  double vocab_block = 0;  // the fused LM head's vocabulary block
  ElemBytes bytes{};
};

CandidateContext candidate_context(const ModelSpec& s, const Topology& topo, const PlanOptions& o,
                                   int world);

}  // namespace muonplan
