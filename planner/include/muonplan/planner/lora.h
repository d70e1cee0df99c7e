// LoRA as prime-rl runs it (docs/planner.md, "LoRA"): which base matrices get adapters, the
// adapters' shapes, and the refusals. The inventory it builds keeps the base weights in
// ParamInventory::frozen and the adapters in ParamInventory::tensors (param_inventory.h).
#pragma once

#include <string>
#include <vector>

#include "muonplan/planfile/param_inventory.h"
#include "muonplan/planfile/plan_options.h"

namespace muonplan {

// prime-rl's LoRAConfig defaults (configs/trainer.py): rank 16, alpha 32, and these target
// modules, matched against the components of a module's path (names a model lacks match none).
inline constexpr int64_t kLoraDefaultRank = 16;
inline constexpr double kLoraDefaultAlpha = 32;
const std::vector<std::string>& lora_default_targets();

// The targets in force: the configured ones, or prime-rl's defaults.
std::vector<std::string> lora_targets_or(const LoraConfig& lora);
double lora_alpha_or(const LoraConfig& lora);

// "a,b,c" into target names; InputError at `field` for an empty name or a regex pattern
// (prime-rl takes regexes; muonplan matches plain module names only).
std::vector<std::string> parse_lora_targets(const std::string& text, const std::string& field);

// InputError naming `field` when LoRA is asked with an optimizer it is not run with: prime-rl's
// LoRA runs use AdamW (Muon on the adapters is not planned), or with a bad rank or slot count.
void check_lora(const LoraConfig& lora, OptimizerKind optimizer, const std::string& field);
// "at most kMaxLoraAdapters adapter slots are planned (...), got N" (plan_options.h).
std::string lora_adapters_message(int64_t adapters);

// prime-rl refuses optimizer-state offload with more than one adapter slot (its
// validate_optim_cpu_offload_single_run): the search lists such a candidate with this note, and
// --offload optimizer with --lora-adapters > 1 is refused with it.
inline constexpr const char* kLoraSlotsOffloadRefused =
    "optimizer offload with more than one LoRA adapter slot is refused by prime-rl "
    "(optim_cpu_offload with max_concurrent_runs > 1); plan with --offload none or full";
bool lora_offload_refused(const LoraConfig& lora, OffloadMode mode);

// With lora.rank > 0: moves every base tensor of `inv` to inv.frozen and puts in inv.tensors,
// per adapter slot, A [rank, in] and B [out, rank] for each targeted matrix (each partition of
// a fused one; [E, rank, in] / [E, out, rank] for an expert stack), trained by AdamW.
void apply_lora(ParamInventory& inv, const LoraConfig& lora);

}  // namespace muonplan
