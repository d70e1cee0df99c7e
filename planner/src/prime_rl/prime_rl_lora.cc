// prime-rl's `[model.lora]` (RL: [trainer.model.lora]) and max_concurrent_runs, read into the
// --lora-* flags (lora.h). Kept apart from the other tables' readers (prime_rl_in.cc).
#include <cstdio>

#include "muonplan/planner/lora.h"
#include "trainer_file.h"

namespace muonplan::detail {

void read_lora(const TrainerFile& f, TrainerConfig& tc) {
  // max_concurrent_runs is the trainer's (TrainerConfig): [trainer] in an RL file, top level
  // in a trainer-only one. It sets the adapter slots MultiLoRA keeps resident.
  const char* runs_table = f.get("trainer", "max_concurrent_runs") ? "trainer" : "";
  if (f.get("trainer", "max_concurrent_runs") && f.get("", "max_concurrent_runs"))
    f.fail("", "max_concurrent_runs", "also given in [trainer]; give one of them");
  const int64_t runs = f.integer(runs_table, "max_concurrent_runs", 1);
  // optim_cpu_offload's default is the file's era's (prime_rl_versions.cc): off before
  // 2026-06-26, when a 2026-02-26 file ran max_concurrent_runs > 1 as written.
  const bool offload_default = f.defaults().optim_cpu_offload;
  if (runs > 1 && f.boolean("model", "optim_cpu_offload", offload_default) &&
      !f.section("model", "full_offload", false))
    f.fail(runs_table, "max_concurrent_runs",
           "prime-rl refuses optim_cpu_offload with max_concurrent_runs > 1 (" +
               optim_cpu_offload_on(f) + ": write optim_cpu_offload = false)");
  if (!f.section("model", "lora", false)) return;
  const int64_t rank = f.integer("model", "lora.rank", kLoraDefaultRank);
  tc.values.push_back(f.value("lora-rank", std::to_string(rank), "model",
                              f.get("model", "lora.rank") ? "lora.rank" : "lora"));
  if (!f.get("model", "lora.rank"))
    tc.notes.push_back(f.field("model", "lora.rank") + " = 16 (prime-rl's default)");
  char alpha[40];
  std::snprintf(alpha, sizeof alpha, "%.17g", f.number("model", "lora.alpha", kLoraDefaultAlpha));
  tc.values.push_back(
      f.value("lora-alpha", alpha, "model", f.get("model", "lora.alpha") ? "lora.alpha" : "lora"));
  if (const TomlNode* t = f.get("model", "lora.target_modules")) {
    std::string list;
    for (const TomlNode& item : t->items) {
      if (item.kind != TomlNode::Kind::string)
        f.fail("model", "lora.target_modules", "expected a list of module names");
      list += (list.empty() ? "" : ",") + item.str;
    }
    if (list.empty()) f.fail("model", "lora.target_modules", "an empty list adapts nothing");
    tc.values.push_back(f.value("lora-targets", list, "model", "lora.target_modules"));
  }
  if (const TomlNode* m = f.get("model", "lora.modules_to_save"); m && !m->items.empty())
    f.fail("model", "lora.modules_to_save",
           "fully trained modules beside LoRA are not planned (the plan trains the adapters)");
  tc.values.push_back(
      f.value("lora-adapters", std::to_string(runs), runs_table, "max_concurrent_runs"));
}

}  // namespace muonplan::detail
