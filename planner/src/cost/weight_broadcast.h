// prime-rl's RL trainer hands its weights to the inference servers at the top of every step
// after the first, before `time/step`'s clock starts: the plan's `between_steps_s` list
// (workload_cost.cc; docs/planner.md section 8, "Between steps"). Internal to the cost model.
#pragma once

#include <cstdint>

#include "cost/step_traffic.h"
#include "muonplan/planfile/param_inventory.h"
#include "muonplan/planfile/plan_options.h"

namespace muonplan {

// The bytes rank 0 saves per step with the filesystem broadcast, prime-rl's default
// (trainer/rl/broadcast/filesystem.py, read at the matrix's January 2026 code and later):
// full fine-tuning gathers every parameter to rank 0 in bf16 (DTensor full_tensor, a blocking
// copy to the host per tensor), converts it to the Hugging Face layout and writes it as
// safetensors; LoRA writes, for each run ready to update, that run's adapter slot as the
// trainer holds it (the masters' dtype). 0 where nothing is broadcast: no RL trainer (SFT saves
// weights at checkpoint intervals only; the muonplan runtime has no inference servers), or a
// LoRA job with no active run (prime-rl's benchmark).
double weight_broadcast_bytes(const ParamInventory& inv, const PlanOptions& o);

// prime-rl's NCCL broadcast (trainer/rl/broadcast/nccl.py, NCCLWeightBroadcastSender), full
// fine-tuning: the state dict goes out a group at a time (the tensors outside the decoder
// layers, then each layer). Every trainer rank casts its shard of each tensor to bf16 and
// gathers it whole (DTensor to(bf16).full_tensor(): an all-gather over the FSDP group, one per
// tensor); rank 0 then concatenates the group and broadcasts it over a PyNccl communicator to
// the inference GPUs, after two small broadcasts of its size and metadata. Each is blocking and
// in turn: the terms add. Not counted: the handshake before it (rank 0 marks the step STABLE
// and polls every 0.1 s for the inference side's NCCL_READY) and the relay between inference
// GPUs past the first (a pipelined broadcast moves at its slowest link: rank 0's).
struct NcclBroadcast {
  double bytes = 0;          // bf16 bytes of the state dict: what rank 0 broadcasts
  int64_t tensors = 0;       // one all-gather each
  int64_t groups = 0;        // one concatenation and three broadcasts each
  double gather_s = 0;       // the casts and all-gathers, on every rank
  double send_s = 0;         // rank 0's concatenations and broadcasts
  bool peers_local = false;  // the inference GPUs on rank 0's node (NVLink), else the network
};
NcclBroadcast nccl_broadcast(const ParamInventory& inv, const PlanOptions& o,
                             const step_cost::Rates& r, int world, int gpus_per_node);

}  // namespace muonplan
