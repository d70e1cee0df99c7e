// The `pytorch` runtime profile (docs/planner.md, "Runtime"): memory a PyTorch FSDP2 trainer on
// NCCL takes around the tensors the cost model counts. Internal to the cost model; the pieces
// are exposed for their unit tests (tests/unit/runtime_memory_test.cc).
#pragma once

#include <string>
#include <vector>

#include "cost/step_timeline.h"
#include "muonplan/planner/cost_model.h"

namespace muonplan {

// One NCCL communicator the layout creates, as one rank sees it.
struct NcclComm {
  std::string name;          // fsdp, expert_fsdp, ep, cp
  int ranks = 1;             // in the communicator
  int local_ranks = 1;       // of them on this rank's node (itself included)
  bool collectives = false;  // ring all-gather / reduce-scatter
  bool all_to_all = false;   // send/recv to every peer (EP, Ulysses, the Muon exchange)
};

// Communicators of size > 1 for a layout on `world` ranks, `gpn` per node. The Muon exchange
// runs on the FSDP communicator (its p2p connections); EP and CP communicators exist only in a
// training step (`training`).
std::vector<NcclComm> nccl_communicators(const Layout& layout, int world, int gpn,
                                         bool muon_exchange, bool training, bool ring_cp);

// Device bytes one rank's buffers for `c` take: ring connections x channels, NVLS, and p2p
// connections x channels per peer, plus the network p2p pool toward remote peers.
double nccl_device_bytes(const NcclComm& c, const PytorchRuntime& rt, bool nvlink);

// The pinned host allocator's block for a request: the next power of two.
double pinned_block_bytes(double bytes);

// The step timeline's inputs and the allocator's settings, from a prediction's terms before the
// replay (the optimizer step's buffers, the cuBLAS workspace and what is outside the allocator,
// as add_pytorch_runtime_terms has made them; PredictParts::without_allocator_replay leaves
// them so), the runtime whose step it is (the muonplan executor's optimizer step makes only its
// step buffers, and no fitted stand-in for PyTorch's backward temporaries is added), the
// attention kernel the workload runs on the topology's GPU, and the rank the GPU terms are for.
TimelineInputs step_timeline_inputs(const Prediction& p, RuntimeKind runtime, const Topology& topo,
                                    const PlanOptions& o, int peak_rank);
AllocatorConfig step_allocator_config(const Prediction& p, const PlanOptions& o,
                                      const PytorchRuntime& rt);

// The muonplan runtime's GPU allocated terms, of a training step or (without a workload) of the
// optimizer step alone: the step timeline with the executor's optimizer step, at its live peak
// (live_peak: no caching allocator), the tensors live there by kind in their lists, summing to
// that peak; `p`'s step buffers (the executor's, section 4) are the timeline's input and go.
struct CandidateContext;
void add_muonplan_timeline_terms(const ModelSpec& spec, const ParamInventory& inv,
                                 const CandidateContext& cc, const ChunkPlan& plan, int peak_rank,
                                 Prediction& p);

// Replaces the executor's fixed overheads with the pytorch runtime's terms: allocated extras,
// the allocator reserve, outside-the-allocator bytes and the host terms. `peak_rank` is the rank
// the GPU terms are for; `replay`: whether to replay the allocation timeline (PredictParts).
void add_pytorch_runtime_terms(const ModelSpec& spec, const ParamInventory& inv,
                               const CandidateContext& cc, const ChunkPlan& plan, int peak_rank,
                               bool replay, Prediction& p);

}  // namespace muonplan
