// The emit's check (prime_rl_emit_check.h), on the rule the search and the trainer answer use
// (prime_rl_rules.h).
#include "prime_rl/prime_rl_emit_check.h"

#include <stdexcept>

#include "muonplan/base/enum_names.h"
#include "muonplan/base/error.h"
#include "prime_rl/prime_rl_rules.h"
#include "prime_rl/trainer_keys.h"

namespace muonplan {

void check_prime_rl_runs(const nlohmann::json& plan, const std::string& date, bool sft, bool vlm,
                         bool standalone) {
  const nlohmann::json& l = plan.at("layout");
  Layout layout;
  layout.fsdp = l.at("fsdp");
  layout.cp = l.at("cp");
  layout.ep = l.at("ep");
  const auto offload = enum_from_name(kOffloadModeNames, plan.at("offload").get<std::string>());
  const auto optimizer = enum_from_name(kOptimizerNames, plan.at("optimizer").get<std::string>());
  if (!offload || !optimizer) throw std::runtime_error("plan JSON: unknown offload or optimizer");
  // The run as the plan has it: the rules of `date`, with the workload's CP inputs.
  PrimeRlRun run;
  run.version = date;
  run.sft = sft;
  run.vlm = vlm;
  run.standalone = standalone;
  const nlohmann::json w = plan.value("workload", nlohmann::json());
  if (w.is_object()) {
    run.attention = w.value("attention", "");
    run.cp_style = w.value("cp_style", "");
    run.micro_batch_seqs = w.value("micro_batch_seqs", int64_t{1});
    run.seq_len = w.value("seq_len", int64_t{0});
  }
  std::string why = prime_rl_cannot_run_nodes(plan.at("nodes").get<int>(), run);
  if (why.empty()) why = prime_rl_cannot_run(*offload, *optimizer, layout, run);
  if (why.empty()) return;
  throw InputError({}, "--emit",
                   "prime-rl cannot run this plan (" + std::to_string(plan.at("nodes").get<int>()) +
                       " node(s), offload " + plan.at("offload").get<std::string>() +
                       ", optimizer " + plan.at("optimizer").get<std::string>() + "): " + why +
                       "; no config written, since prime-rl would run it otherwise than planned");
}

void check_prime_rl_keys_on(const nlohmann::json& plan, const std::string& date, bool sft) {
  const std::string offload = plan.at("offload");
  const nlohmann::json w = plan.value("workload", nlohmann::json());
  const std::string style = w.is_null() ? "ring" : w.at("cp_style").get<std::string>();
  struct Need {
    bool needed;
    const char* key;
    std::string what, instead;
  };
  const Need needs[] = {
      {offload == "optimizer", "optim_cpu_offload", "offload optimizer", "--offload none"},
      {offload == "full", "full_offload", "offload full", "--offload none"},
      {style == "ulysses", "cp_style", "cp_style ulysses", "--cp-style ring"}};
  for (const Need& n : needs) {
    if (!n.needed || !prime_rl_key_on("model", n.key, sft, date).empty()) continue;
    throw InputError({}, "--emit",
                     "prime-rl of " + date + " has no key " + n.key + " (docs/trainer-config.md, " +
                         "\"Key eras\"), so it would not run this plan's " + n.what +
                         "; no config written: re-plan with " + n.instead +
                         " or a later --prime-rl-version");
  }
}

}  // namespace muonplan
