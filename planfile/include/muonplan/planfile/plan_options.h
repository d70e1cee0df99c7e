// What a user asks the planner for: the layout, the optimizer and its offload, the workload.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "muonplan/base/enum_names.h"
#include "muonplan/planfile/chunk_plan.h"
#include "muonplan/planfile/ns_schedule.h"
#include "muonplan/planfile/shards.h"

namespace muonplan {

enum class OffloadMode { none, optimizer, full };
enum class OptimizerKind { muon, adamw, signsgd };
inline constexpr EnumName<OffloadMode> kOffloadModeNames[] = {{OffloadMode::none, "none"},
                                                              {OffloadMode::optimizer, "optimizer"},
                                                              {OffloadMode::full, "full"}};
inline constexpr EnumName<OptimizerKind> kOptimizerNames[] = {{OptimizerKind::muon, "muon"},
                                                              {OptimizerKind::adamw, "adamw"},
                                                              {OptimizerKind::signsgd, "signsgd"}};
OffloadMode parse_offload(const std::string& name);  // InputError on unknown
OptimizerKind parse_optimizer(const std::string& name);
const char* to_string(OffloadMode m);
const char* to_string(OptimizerKind k);

// How optimizer state (Muon momentum, AdamW moments) held on the host reaches the GPU kernels,
// one enum for the choice and the offload policy's answer (offload_policy.h). `optimizer`
// offload chooses (--offload-staging, the plan's optimizer_offload_staging): `whole` stages the
// rank's whole state on the GPU for the step (what torch-based optimizer-state offload does:
// state.to(device) before the step, back after), `chunked` streams it chunk by chunk with the
// batches in flight. `none`: it is not staged, being on the GPU already (no offload) or used
// where it lives by the host kernels (full offload); the mode implies it, so no flag names it.
enum class OffloadStaging { none, whole, chunked };
// The choices (not `none`).
inline constexpr EnumName<OffloadStaging> kOffloadStagingNames[] = {
    {OffloadStaging::whole, "whole"}, {OffloadStaging::chunked, "chunked"}};
OffloadStaging parse_offload_staging(const std::string& name);  // InputError on unknown
const char* to_string(OffloadStaging s);

// Training workload: with it the plan covers forward/backward too (activations, FSDP traffic,
// training-step time). docs/planner.md, "Workload".
// How context parallelism exchanges attention inputs: Ulysses all-to-alls of q/k/v/out
// (heads split over the CP ranks), or ring attention passing k/v blocks around the ring.
enum class CpStyle { ulysses, ring };
inline constexpr EnumName<CpStyle> kCpStyleNames[] = {{CpStyle::ulysses, "ulysses"},
                                                      {CpStyle::ring, "ring"}};
CpStyle parse_cp_style(const std::string& name);  // InputError on unknown
const char* to_string(CpStyle s);

// The trainer's attention kernel (prime-rl `model.attn`); its throughput per GPU generation times
// attention. `auto`: FlashAttention-3 on SM90 (Hopper), FlashAttention-2 elsewhere, as prime-rl.
enum class AttentionKernel { auto_kernel, fa2, fa3, sdpa };
inline constexpr EnumName<AttentionKernel> kAttentionKernelNames[] = {
    {AttentionKernel::auto_kernel, "auto"},
    {AttentionKernel::fa2, "fa2"},
    {AttentionKernel::fa3, "fa3"},
    {AttentionKernel::sdpa, "sdpa"}};
AttentionKernel parse_attention_kernel(const std::string& name);  // InputError on unknown
const char* to_string(AttentionKernel k);

struct Workload {
  int64_t tokens_per_step = 0;  // global batch in tokens
  int64_t seq_len = 0;
  int64_t micro_batch_seqs = 1;  // sequences per rank per micro step (before CP splits them)
  bool ac_full = true;           // full activation checkpointing
  bool ac_offload = false;       // checkpointed layer inputs kept in host RAM
  int64_t lm_head_chunk = 0;     // fused LM head: tokens per logits chunk; 0: unfused
  CpStyle cp_style = CpStyle::ulysses;
  // Layer inputs on the GPU while they stream to host RAM under AC offload (prime-rl's
  // ac_offloading.max_inflight_activations, from a trainer config); 0: not set, the topology's
  // pytorch.ac_offload_inflight_layers (prime-rl's default). The plan file stores it when set.
  int64_t ac_max_inflight = 0;
  AttentionKernel attention = AttentionKernel::auto_kernel;
  // prime-rl's [model] optimization_dtype: bytes of an FSDP master element, of its gradient
  // shard and of each optimizer-state array (4 float32, 2 bfloat16: the model is loaded in that
  // dtype, FSDP2 keeps its shards and gradients in it, torch's optimizers their state);
  // reduce_dtype: bytes of a gradient element in FSDP2's reduce-scatter (MixedPrecisionPolicy).
  int64_t master_bytes = 4;
  int64_t reduce_bytes = 4;
  // The prime-rl trainer that runs the step (docs/planner.md section 8, "The trainer's host
  // work"): "" none named (no trainer host terms), "rl" or "sft"; and prime-rl's date
  // (YYYY-MM-DD, "" the newest known), which picks each era's mechanisms (the RL per-token host
  // loop, the LM head's chunking).
  std::string trainer{};
  std::string prime_rl_date{};
  // Tokens routed to each expert (any scale; a trainer's logs, --expert-load FILE); empty:
  // balanced routing.
  std::vector<double> expert_load{};
  // prime-rl's [model.ac] beside ac_full (docs/trainer-config.md, "Activation checkpointing"):
  // ac_selective (ac_full false) checkpoints only the functions of ac_targets inside each layer
  // (empty: prime-rl's default, norm); ac_freq N puts AC (full or selective) on the layers whose
  // index is a multiple of N, the others keep every activation. The rule per layer is
  // layer_ac() in planner/src/cost/ac_layers.h.
  bool ac_selective = false;
  std::vector<std::string> ac_targets{};
  int64_t ac_freq = 1;
  // prime-rl RL's weight broadcast to its inference servers between two steps (docs/planner.md
  // section 8, "Between steps"; a trainer config's [weight_broadcast] type): "" the filesystem,
  // prime-rl's default; "nccl" a gather per layer and an NCCL broadcast from rank 0, to
  // inference GPUs on rank 0's node (inference_on_trainer_node: the rl launcher on one node) or
  // across the network. The plan file stores them when nccl.
  std::string weight_broadcast{};
  bool inference_on_trainer_node = false;
};
// 4 or 2 from "float32" or "bfloat16" (prime-rl's names); InputError naming `flag` otherwise.
int64_t parse_dtype_bytes(const std::string& flag, const std::string& name);
const char* dtype_name(int64_t bytes);  // "float32" or "bfloat16"

// LoRA as prime-rl runs it (`[model.lora]`): the base weights are frozen bf16 (no fp32 master,
// gradient or optimizer state); each target module gets adapters A [rank, in] and B [out, rank]
// with fp32 master, gradient and AdamW state, `adapters` times (prime-rl's max_concurrent_runs
// slots kept resident). rank 0: no LoRA.
// The most adapter slots a plan holds (--lora-adapters, max_concurrent_runs, a plan's
// lora.adapters): each slot is its own copy of every adapter tensor in the plan and the step,
// so planning time grows linearly in slots (docs/planner.md, "LoRA"); 1000 took 42 s and
// 2.7 GB, 2^31-1 ran out of memory. prime-rl's multi-run CI runs 2; 64 is far above use.
inline constexpr int64_t kMaxLoraAdapters = 64;
struct LoraConfig {
  int64_t rank = 0;
  double alpha = 0;                         // 0: prime-rl's default
  std::vector<std::string> target_modules;  // empty: prime-rl's default targets
  int64_t adapters = 1;
  // Runs whose AdamW exists (prime-rl's MultiLoRAOptimizer creates one per run, when the run's
  // directory appears): only their slots hold moments and run an optimizer step. -1: every
  // slot; 0: none, and no optimizer step.
  int64_t active_runs = -1;
  int64_t active_runs_or() const { return active_runs < 0 ? adapters : active_runs; }
};

// Step hyperparameters: not needed to plan, carried in the Plan for the executor.
struct OptimizerHyper {
  double lr = 0.02;
  double momentum = 0.95;  // mu
  double weight_decay = 0.0;
  double update_rms = 0;  // 0: the schedule's recommendation (0.2; 0.18 for deepseek-v4)
  double adamw_lr = 0;    // 0: lr
  double adamw_beta1 = 0.9;
  double adamw_beta2 = 0.95;
  double adamw_eps = 1e-8;
  double adamw_weight_decay = 0.0;

  // The values in force, defaults applied: the plan file writes these, the step runs them.
  double update_rms_or(const NsSchedule& s) const {
    return update_rms > 0 ? update_rms : s.update_rms;
  }
  double adamw_lr_or_lr() const { return adamw_lr > 0 ? adamw_lr : lr; }
};

// Whether Nesterov momentum is allowed under `m`: the offload policy's (offload_policy.h) answer,
// which the search, the flags, the report's sweep, the plan loader and the step ask.
bool nesterov_supported(OffloadMode m);
// The one refusal of Nesterov momentum, whichever path refuses it (check_nesterov below; the
// search's and the report's candidate notes): why, and what to plan instead.
inline constexpr const char* kNesterovRefused =
    "Nesterov momentum is not supported under full offload (the host folds the momentum before "
    "the device sees it); plan with --offload optimizer or none";

struct PlanOptions;
// InputError "FIELD: <kNesterovRefused>" at `loc` (none for a flag, the file for a plan field)
// when `o` asks for Nesterov momentum under an offload mode that does not support it: the
// flags (--nesterov), the plan loader (optimizer_config.nesterov), execute and the step (--plan).
void check_nesterov(const PlanOptions& o, const std::string& field, const SourceLoc& loc = {});

// Which runtime's memory the plan predicts (docs/planner.md, "Runtime"): muonplan's executor
// (exact: predicted equals allocated) or a PyTorch FSDP2 trainer on NCCL (allocator reserve,
// NCCL buffers, context, pinned rounding). The CLI makes `pytorch` the default with a workload.
enum class RuntimeKind { muonplan, pytorch };
inline constexpr EnumName<RuntimeKind> kRuntimeNames[] = {{RuntimeKind::muonplan, "muonplan"},
                                                          {RuntimeKind::pytorch, "pytorch"}};
RuntimeKind parse_runtime(const std::string& name);  // InputError on unknown
const char* to_string(RuntimeKind r);

struct PlanOptions {
  int nodes = 1;
  int gpus_per_node = 0;  // 0: the topology's
  Layout layout;
  OptimizerKind optimizer = OptimizerKind::muon;
  OffloadMode offload = OffloadMode::none;
  OffloadStaging optimizer_staging = OffloadStaging::whole;
  bool pinned_host_state = false;  // `optimizer` offload: state in pinned (vs pageable) memory
  bool bf16_momentum = false;
  bool nesterov = false;
  NsSchedule schedule = ns_schedule("quintic");
  OptimizerHyper hyper;
  OwnerStrategy owners = OwnerStrategy::balanced;
  std::optional<Workload> workload;
  LoraConfig lora;
  // Limit per GPU; 0: the topology's whole memory (gpu.memory_gib). Not net of anything: the
  // fixed overheads (CUDA context, workspaces, NCCL buffers) are terms of the predicted peak.
  double gpu_memory_gib = 0;
  double host_ram_gib = 0;  // limit per node; 0: the topology's
  bool include_mtp = false;
  RuntimeKind runtime = RuntimeKind::muonplan;
  // The PyTorch allocator's expandable segments (--allocator; prime-rl's launcher sets them);
  // nullopt: the topology's pytorch.expandable_segments.
  std::optional<bool> expandable_segments;
  // Fractions of the GPU and host limits kept free by the fit decision; negative: the runtime's
  // default (gpu_headroom_or, host_headroom_or).
  double gpu_headroom = -1;
  double host_headroom = -1;
  double gpu_headroom_or() const;
  double host_headroom_or() const;
  int batches_in_flight() const;  // the offload policy's for offload and optimizer_staging
  // The workload's master_bytes and reduce_bytes; 4 (fp32) for the optimizer step alone.
  int64_t master_bytes() const { return workload ? workload->master_bytes : 4; }
  int64_t reduce_bytes() const { return workload ? workload->reduce_bytes : 4; }
};

}  // namespace muonplan
