// The key table. Defaults are prime-rl's (main at v0.8.1.dev67); the reader applies them
// where a file is silent.
#include "prime_rl/trainer_keys.h"

#include <stdexcept>

namespace muonplan {

// [model.vlm] (BaseModelConfig.vlm, prime-rl main): a vision-language model. The plan is the
// spec's (its language model); the vision encoder, frozen by default, is not in it.
constexpr const char* kVlmMeaning =
    "vision-language model: planned as the spec's language model; the vision encoder is not "
    "planned";

const std::vector<TrainerKey>& trainer_keys() {
  using T = KeyType;
  static const std::vector<TrainerKey> keys = {
      {"", "seq_len", T::integer, true, "row length (fills trainer and orchestrator seq_len)"},
      {"", "num_nodes", T::integer, true, "older SFT files: nodes"},
      {"", "gpus_per_node", T::integer, true, "older SFT and rl_slurm files: GPUs per node"},
      {"", "num_train_nodes", T::integer, true, "rl_slurm era: trainer nodes"},
      {"", "num_training_nodes", T::integer, true, "older rl_slurm name of num_train_nodes"},
      {"", "num_infer_nodes", T::integer, false, "rl_slurm era: inference nodes, not planned"},
      {"", "num_inference_nodes", T::integer, false, "older rl_slurm name of num_infer_nodes"},
      {"", "nodes_per_fsdp_group", T::integer, true, "rl_slurm era: dp_replicate = nodes / this"},
      {"", "trainer_gpu_ids", T::list, true, "rl launcher: the trainer's GPUs on one node ([1])"},
      {"", "inference_gpu_ids", T::list, false, "rl launcher: inference GPUs, not planned"},
      {"shared", "name", T::string, true, "the model: HF id or path (model resolution)"},
      // BaseModelConfig's other keys (prime-rl main, configs/shared.py): the trainer's [model]
      // has them too (below).
      {"shared", "trust_remote_code", T::boolean, false, ""},
      {"shared", "vlm", T::section, false, kVlmMeaning},
      {"shared", "vlm.vision_encoder_attr", T::string, false, "the vision encoder's module"},
      {"shared", "vlm.language_model_attr", T::string, false, "the language model's module"},
      {"shared", "vlm.freeze_vision_encoder", T::boolean, false, "frozen by default"},
      {"slurm", "num_train_nodes", T::integer, true, "rl on SLURM: trainer nodes"},
      {"slurm", "num_infer_nodes", T::integer, false, "rl on SLURM: inference, not planned"},
      {"slurm", "gpus_per_node", T::integer, true, "rl on SLURM: GPUs per node (8)"},
      {"slurm", "nodes_per_fsdp_group", T::integer, true, "dp_replicate = nodes / this"},
      {"slurm", "job_name", T::string, false,
       "SLURM job name; a multi_node deployment needs a [slurm] table (docs/slurm.md)"},
      {"model", "name", T::string, true, "the model: HF id or path (model resolution)"},
      {"model", "seq_len", T::integer, true, "row length"},
      {"model", "dp_replicate", T::integer, true, "HSDP replicas: fsdp = world / dp_replicate"},
      {"model", "cp", T::integer, true, "context parallel degree (default 1)"},
      {"model", "cp_style", T::string, true, "ring (default) or ulysses"},
      {"model", "ep", T::int_or_word, true, "expert parallel degree or auto"},
      {"model", "tp", T::integer, false,
       "older schemas (until prime-rl #2109): tensor parallel; > 1 is planned as 1, warned"},
      {"model", "ac", T::section, true, "activation checkpointing (on; \"None\" off)"},
      {"model", "ac.mode", T::string, true,
       "full (default) or selective (--ac); a later schema's mode is planned as full"},
      {"model", "ac.freq", T::integer, true, "AC on every N-th layer (--ac-freq; default 1)"},
      {"model", "ac.targets", T::list, true,
       "selective AC targets (--ac-targets; default norm): norm, attn_proj, mlp, mla_up_proj, "
       "routed_experts, linear_attn"},
      {"model", "ac_offloading", T::section, true, "saved activations in host RAM (on)"},
      {"model", "ac_offloading.max_inflight_activations", T::integer, true,
       "activations in flight to the host (default 5)"},
      {"model", "ac_offloading.pin_memory", T::boolean, false, "pinned host buffers"},
      {"model", "fused_lm_head_token_chunk_size", T::int_or_word, true,
       "LM-head chunk in tokens (RL default 8192; disabled: unfused)"},
      {"model", "fused_lm_head_chunk_size", T::int_or_word, true, "older name of the above"},
      {"model", "optim_cpu_offload", T::boolean, true,
       "optimizer state in host RAM (default true)"},
      {"model", "full_offload", T::section, true, "masters, moments and grads in host RAM"},
      {"model", "full_offload.cpu_optimizer_backend", T::string, false, "CPU kernel"},
      {"model", "full_offload.numa_bind", T::boolean, false, "NUMA binding"},
      {"model", "fsdp_cpu_offload", T::boolean, true, "planned as full offload"},
      {"model", "impl", T::string, false, "hf, custom or auto"},
      {"model", "attn", T::string, true,
       "attention kernel: flash_attention_2, flash_attention_3, sdpa or auto (the default: FA3 "
       "on SM90, FA2 elsewhere; before prime-rl #3057 the default was flash_attention_2)"},
      {"model", "trust_remote_code", T::boolean, false, ""},
      {"model", "ep_comm_backend", T::string, false, "torch or deepep"},
      {"model", "deepep_num_sms", T::integer, false, ""},
      {"model", "deepep_token_chunk_size", T::integer, false, ""},
      {"model", "reshard_after_forward", T::boolean, false, "FSDP re-gather in backward"},
      {"model", "compile", T::opaque, false, "torch.compile"},
      {"model", "moe_use_grouped_mm", T::boolean, false, ""},
      {"model", "moe_fused_kernel", T::boolean, false, ""},
      {"model", "optimization_dtype", T::string, true,
       "masters, their gradients and optimizer state: float32 (default) or bfloat16"},
      {"model", "reduce_dtype", T::string, true,
       "gradient reduce-scatter: float32 (default) or bfloat16"},
      {"model", "moe_router_dtype", T::string, false, ""},
      {"model", "quantization", T::opaque, false, "fp8/mxfp8: not planned"},
      {"model", "fp8", T::boolean, false, "older name of quantization = {type = \"fp8\"}"},
      {"model", "lora", T::section, true, "LoRA: adapters on frozen base weights (off)"},
      {"model", "lora.rank", T::integer, true, "adapter rank (16)"},
      {"model", "lora.alpha", T::number, true, "scaling (32); carried to the plan"},
      {"model", "lora.dropout", T::number, false, ""},
      {"model", "lora.target_modules", T::list, true,
       "adapted modules (q/k/v/o_proj, gate/up/down_proj, experts)"},
      {"model", "lora.modules_to_save", T::list, true, "fully trained modules: not planned"},
      {"trainer", "max_concurrent_runs", T::integer, true, "LoRA adapter slots resident (1)"},
      // The trainer's environment (#2863): the allocator is read from it (read_allocator) and
      // written there (trainer_config.cc write_allocator); other variables are not planned.
      {"trainer", "env_vars.PYTORCH_CUDA_ALLOC_CONF", T::string, true,
       "the allocator: expandable_segments:True (the launcher's) or not"},
      {"", "max_concurrent_runs", T::integer, true, "trainer-only file: the same"},
      {"model", "freeze_moe_router", T::boolean, false, ""},
      {"model", "vlm", T::section, false, kVlmMeaning},
      {"model", "vlm.vision_encoder_attr", T::string, false, "the vision encoder's module"},
      {"model", "vlm.language_model_attr", T::string, false, "the language model's module"},
      {"model", "vlm.freeze_vision_encoder", T::boolean, false, "frozen by default"},
      {"model", "moe", T::opaque, false, "later schemas: MoE dispatch and compute backends"},
      {"optim", "type", T::string, true, "adamw (default), muon, sign_sgd (signsgd)"},
      {"optim", "lr", T::number, true, "learning rate (default 1e-6)"},
      {"optim", "weight_decay", T::number, true,
       "weight decay (default 0.01; later schemas' auto: RL 0.0, SFT 0.01)"},
      {"optim", "max_norm", T::number, false,
       "gradient clipping: planned every step at any value (grad_clip)"},
      {"optim", "betas1", T::number, true, "AdamW beta1 (0.9)"},
      {"optim", "betas2", T::number, true, "AdamW beta2 (0.999; Muon's AdamW part 0.95)"},
      {"optim", "mu", T::number, true, "Muon momentum (0.95)"},
      {"optim", "momentum", T::number, false, "sgd only"},
      {"optim", "nesterov", T::boolean, false, "sgd only"},
      // Muon settings prime-rl main has no key for: refused (its configs forbid extra keys).
      {"optim", "bf16_momentum", T::boolean, false, "refused: prime-rl main has no such key"},
      {"optim", "update_rms", T::number, false, "refused: prime-rl main has no such key"},
      {"optim", "newton_schulz_coefficients", T::list, false,
       "refused: prime-rl main has no such key"},
      {"deployment", "type", T::string, true, "single_node (default) or multi_node"},
      {"deployment", "num_train_gpus", T::integer, true, "single node: trainer GPUs (1)"},
      {"deployment", "num_train_nodes", T::integer, true, "multi node: trainer nodes"},
      {"deployment", "gpus_per_node", T::integer, true, "GPUs per node (8)"},
      {"deployment", "nodes_per_fsdp_group", T::integer, true, "dp_replicate = nodes / this"},
      {"deployment", "num_nodes", T::integer, true, "older SFT name of num_train_nodes"},
      {"deployment", "num_gpus", T::integer, true, "older SFT name of num_train_gpus"},
      {"deployment", "num_infer_gpus", T::integer, false, "inference: not planned"},
      {"deployment", "num_infer_nodes", T::integer, false, "inference: not planned"},
      {"deployment", "num_infer_replicas", T::integer, false, "inference: not planned"},
      {"deployment", "orchestrator_on_inference", T::boolean, false, ""},
      {"data", "batch_size", T::integer, true, "rows per step (128)"},
      {"data", "micro_batch_size", T::integer, true, "rows per micro step per rank (1)"},
      {"data", "seq_len", T::integer, true, "row length (128)"},
      {"data", "name", T::string, false, "dataset"},
      {"data", "split", T::string, false, ""},
      {"data", "splits", T::list, false, ""},
      {"data", "type", T::string, false, ""},
      {"data", "pack_function", T::string, false, ""},
      {"data", "shuffle", T::boolean, false, ""},
      {"data", "seed", T::integer, false, ""},
      {"data", "loss_mask", T::opaque, false, ""},
      {"data", "subsets", T::list, false, "dataset subsets"},
      {"data", "fake", T::section, true, "standalone trainer: fake micro batches"},
      {"data", "fake.batch_size", T::integer, true, "standalone trainer: rows per step (2)"},
      {"data", "fake.micro_batch_size", T::integer, true, "older trainer: rows per micro step"},
      {"data", "fake.seq_len", T::integer, true, "older trainer: row length"},
      {"data", "fake.generate_samples", T::boolean, false, "packed samples instead of rows"},
      {"orchestrator", "batch_size", T::integer, true, "samples per step (128)"},
      {"orchestrator", "token_batch_size", T::integer, true, "tokens per step"},
      {"orchestrator", "group_size", T::integer, true, "batch_size must divide by it"},
      {"orchestrator", "rollouts_per_example", T::integer, true, "older name of group_size"},
      {"orchestrator", "seq_len", T::integer, true, "must not exceed the trainer's"},
      {"muonplan", "offload", T::string, true, "full: Muon under full offload"},
      {"muonplan", "bf16_momentum", T::boolean, true, "--bf16-momentum"},
      {"muonplan", "nesterov", T::boolean, true, "--nesterov"},
      {"muonplan", "update_rms", T::number, true, "--update-rms"},
      {"muonplan", "ns_schedule", T::string, true, "--ns-schedule (or custom)"},
      {"muonplan", "newton_schulz_coefficients", T::list, true, "custom schedule [[a, b, c], ...]"},
      {"muonplan", "adamw_lr", T::number, true, "--adamw-lr"},
      {"muonplan", "adamw_weight_decay", T::number, true, "--adamw-weight-decay"},
      {"muonplan", "owners", T::string, true, "--owners"},
      {"muonplan", "offload_staging", T::string, true, "--offload-staging"},
      {"muonplan", "pinned_state", T::boolean, true, "--pinned-state"},
      {"muonplan", "include_mtp", T::boolean, true, "--include-mtp"},
      {"muonplan", "gpu_memory_gib", T::number, true, "--gpu-memory-gib"},
      {"muonplan", "host_ram_gib", T::number, true, "--host-ram-gib"},
      {"muonplan", "nodes", T::integer, true, "standalone trainer file: torchrun --nnodes"},
      {"muonplan", "gpus_per_node", T::integer, true,
       "standalone trainer file: torchrun --nproc-per-node"},
  };
  return keys;
}

const TrainerKey* find_trainer_key(const std::string& table, const std::string& key) {
  for (const TrainerKey& k : trainer_keys()) {
    if (table == k.table && key == k.key) return &k;
  }
  return nullptr;
}

const TrainerKey& trainer_key(const std::string& table, const std::string& key) {
  if (const TrainerKey* k = find_trainer_key(table, key)) return *k;
  throw std::logic_error("trainer key not in the table: [" + table + "] " + key);
}

std::string prime_rl_table(const std::string& table, bool top_level) {
  if (table == "model" || table == "optim") return top_level ? table : "trainer." + table;
  if (table == "shared") return "model";
  return table;
}

bool is_planning_table(const std::string& table) {
  return table == "model" || table == "optim" || table == "deployment" || table == "data" ||
         table == "shared";
}

}  // namespace muonplan
