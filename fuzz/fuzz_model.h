// What the model harnesses do with a spec that loaded: the inventory and its summary, the
// downstream code whose sizes the loaders' limits must keep finite.
#pragma once

#include <cstdint>

#include "muonplan/planner/inventory.h"
#include "muonplan/planner/model_spec.h"

namespace muonplan::fuzz {

// The loader has listed every tensor once already (its size checks build the inventory). The
// largest specs it accepts (10k layers, 500k expert tensors) take seconds to list under the
// sanitizers, so the harness lists them again only when that stays well under a second.
inline bool cheap_to_list(const ModelSpec& s) {
  const int64_t layers = s.num_layers + s.mtp_layers;
  const int64_t expert_tensors = s.storage.stacked_experts ? 0 : 3 * s.moe.num_experts * layers;
  return layers <= 1000 && expert_tensors <= 50'000;
}

// Any exception from here is a finding: a spec that loaded must give an inventory.
inline void exercise_model(const ModelSpec& spec) {
  if (!cheap_to_list(spec)) return;
  const ParamInventory inv = build_inventory(spec);
  const InventorySummary main = inv.summarize(false);
  const InventorySummary all = inv.summarize(true);
  // Totals that disagree mean an overflow the loader's limits let through.
  if (all.params_total != main.params_total + inv.mtp_params()) __builtin_trap();
  if (main.params_total != main.params_muon + main.params_adamw) __builtin_trap();
}

}  // namespace muonplan::fuzz
