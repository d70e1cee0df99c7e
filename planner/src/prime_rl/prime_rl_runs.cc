// The combinations prime-rl refuses (prime_rl_rules.h): the rules, each with the prime-rl change
// that lifts it, and the search's view of them. Dates compare as ISO text.
#include <algorithm>
#include <utility>

#include "prime_rl/prime_rl_rules.h"
#include "prime_rl/trainer_config_in.h"
#include "prime_rl/trainer_keys.h"

namespace muonplan {
namespace {

// The optimizers of prime-rl's trainer config by date (`optim.type`; AdamW from the first
// trainer config). A date before `since` has no such type: its config refuses it.
struct OptimizerEra {
  OptimizerKind kind;
  const char* type;   // prime-rl's name
  const char* since;  // YYYY-MM-DD
  const char* change;
};
// The merge dates are not in the sources searched: each is the date of the PR's thread that
// shows it landing (muon: the review of #690 that asked for `type = "muon"`; sign_sgd: #2148
// opened), so a date shortly after it may still lack the type.
constexpr OptimizerEra kOptimizerEras[] = {
    {OptimizerKind::muon, "muon", "2025-08-12", "#690 (add muon, reviewed 2025-08-12)"},
    {OptimizerKind::signsgd, "sign_sgd", "2026-03-31",
     "#2148 (feat: add signsgd memory-efficient optimizers, 2026-03-31)"},
};
// full_offload's CPU step ran AdamW only until #3303 added sign_sgd's kernel (2026-08-18).
constexpr const char* kFullOffloadSignSgd = "2026-08-18";
// prime-rl's CP before ring-flash-attn (#1305, 2025-11-17) was torch's ring attention over
// SDPA; from it, CP runs only on flash attention (ModelConfig.cp_only_with_flash_attn).
constexpr const char* kCpFlashOnly = "2025-11-17";
// An RL config's trainer on more than one node: rl_slurm (#1774, opened 2026-02-13, still in
// review on 2026-02-17; its merge commit is not in the sources searched, so the later thread
// date). Before it the rl launcher ran every process on one node (trainer_gpu_ids); from
// #1859 (2026-02-23) a multi_node [deployment] runs only under [slurm] (validate_deployment).
constexpr const char* kRlSlurm = "2026-02-17";

bool before(const std::string& version, const char* date) {
  return !version.empty() && version < date;
}

std::string of(const std::string& version) {
  return version.empty() ? "prime-rl" : "prime-rl of " + version;
}

// The optimizer and offload rules: which optimizers the date has, and which full_offload runs.
std::string optimizer_rule(OffloadMode offload, OptimizerKind optimizer, const std::string& v) {
  for (const OptimizerEra& e : kOptimizerEras) {
    if (e.kind == optimizer && before(v, e.since)) {
      return "optimizer " + std::string(e.type) + ": " + of(v) + " has no optim.type = \"" +
             e.type + "\" (it came with " + e.change + ": --prime-rl-version " + e.since +
             " or later runs it); plan with --optimizer adamw";
    }
  }
  // full_offload's era in the key table (prime_rl_versions.cc): before it, prime-rl has no key
  // that keeps the master weights and gradients in host RAM.
  if (offload != OffloadMode::full) return "";
  if (!v.empty() && prime_rl_key_on("model", "full_offload", false, v).empty()) {
    return "full offload: " + of(v) +
           " has no [trainer.model] full_offload (it came with b8d9553c0, #3234, on "
           "2026-08-15: --prime-rl-version 2026-08-15 or later runs it); plan with --offload "
           "optimizer or --offload none";
  }
  // prime-rl's full_offload runs the step on the CPU per chunk during backward with its own
  // AdamW/SignSGD kernels; it refuses Muon, and no other key keeps Muon's state in host RAM
  // through backward.
  if (optimizer == OptimizerKind::muon) {
    return "Muon under full offload: prime-rl's full_offload accepts only adamw and sign_sgd "
           "(it would run once full_offload's CPU step supports Muon's Newton-Schulz update); "
           "plan with --offload optimizer or --offload none, or with --optimizer adamw";
  }
  if (optimizer == OptimizerKind::signsgd && before(v, kFullOffloadSignSgd)) {
    return "sign_sgd under full offload: " + of(v) +
           "'s full_offload runs only AdamW's CPU step (sign_sgd's came with #3303 on " +
           kFullOffloadSignSgd + ": --prime-rl-version " + kFullOffloadSignSgd +
           " or later runs it); plan with --offload optimizer or --offload none";
  }
  return "";
}

// Context parallelism's rules: ep % cp, the attention kernel, a VLM's style, SFT's batch.
std::string cp_rule(const Layout& layout, const PrimeRlRun& run) {
  if (layout.ep != 1 && layout.ep % layout.cp != 0) {
    return "ep=" + std::to_string(layout.ep) + " with cp=" + std::to_string(layout.cp) +
           ": prime-rl needs ep % cp == 0 (it would run once its expert mesh no longer folds cp "
           "into ep); plan with --layout giving ep a multiple of cp, or ep=1";
  }
  if (layout.cp <= 1) return "";
  const std::string cp = "cp=" + std::to_string(layout.cp);
  if (run.sft && prime_rl_key_on("model", "cp", true, run.version).empty()) {
    return cp + ": " + of(run.version) +
           "'s SFT config has no [model] cp (it came with context parallelism, #739, on "
           "2025-08-31: --prime-rl-version 2025-08-31 or later runs it); plan with a layout "
           "of cp=1";
  }
  if (run.attention == "sdpa" && !before(run.version, kCpFlashOnly)) {
    return cp +
           " with attn = \"sdpa\": prime-rl runs CP only with flash attention "
           "(ModelConfig.cp_only_with_flash_attn, since ring-flash-attn, #1305; it would "
           "run once a ring kernel for SDPA returns); plan with --attention fa2 or fa3, or "
           "a layout of cp=1";
  }
  if (run.vlm && run.cp_style != "ulysses") {
    return cp + " for a VLM with cp_style = \"" + run.cp_style +
           "\": prime-rl takes CP for a VLM only with ulysses (vlm_cp_requires_ulysses; it "
           "would run once ring CP shards the vision tokens); plan with --cp-style ulysses, or "
           "a layout of cp=1";
  }
  if (run.sft && run.micro_batch_seqs != 1) {
    return cp + " with micro_batch_size = " + std::to_string(run.micro_batch_seqs) +
           ": prime-rl's SFT takes CP only with one row per micro batch "
           "(validate_cp_micro_batch_size, sft.py); plan with --micro-batch-seqs 1, or a "
           "layout of cp=1";
  }
  if (run.sft && run.seq_len > 0 && run.seq_len % layout.cp != 0) {
    return cp + " with seq_len " + std::to_string(run.seq_len) +
           ": prime-rl's SFT needs the sequence length divisible by cp (validate_cp_seq_len, "
           "sft.py); plan with a cp that divides it";
  }
  return "";
}

}  // namespace

std::string prime_rl_cannot_run(OffloadMode offload, OptimizerKind optimizer, const Layout& layout,
                                const PrimeRlRun& run) {
  const std::string why = optimizer_rule(offload, optimizer, run.version);
  return why.empty() ? cp_rule(layout, run) : why;
}

std::string prime_rl_cannot_run_nodes(int nodes, const PrimeRlRun& run) {
  // SFT and a trainer file ran on more nodes under torchrun --nnodes (the world is the launch's).
  if (nodes <= 1 || run.sft || run.standalone || !before(run.version, kRlSlurm)) return "";
  return std::to_string(nodes) + " nodes: " + of(run.version) +
         "'s rl launcher runs the trainer on one node (trainer_gpu_ids); an RL config runs on "
         "more with rl_slurm (#1774, 2026-02-17: --prime-rl-version " +
         kRlSlurm +
         " or later runs it; from #1859, a multi_node [deployment] under [slurm]); plan with "
         "--nodes 1";
}

std::string prime_rl_cannot_run(OffloadMode offload, OptimizerKind optimizer, const Layout& layout,
                                const std::string& version) {
  PrimeRlRun run;
  run.version = version;
  return prime_rl_cannot_run(offload, optimizer, layout, run);
}

namespace {

class PrimeRlRules final : public RuntimeRules {
 public:
  explicit PrimeRlRules(PrimeRlRun run) : run_(std::move(run)) {}
  std::string cannot_run(OffloadMode offload, OptimizerKind optimizer,
                         const Layout& layout) const override {
    return prime_rl_cannot_run(offload, optimizer, layout, run_);
  }
  std::string cannot_run_nodes(int nodes) const override {
    return prime_rl_cannot_run_nodes(nodes, run_);
  }
  int default_ep(const ModelSpec& spec, int fsdp, int cp) const override {
    return prime_rl_auto_ep(spec, fsdp, cp);
  }

 private:
  PrimeRlRun run_;
};

}  // namespace

int prime_rl_auto_ep(const ModelSpec& spec, int fsdp, int cp) {
  const int experts = static_cast<int>(spec.moe.num_experts);
  for (int ep = std::min(experts, 8); ep > 1; --ep) {
    if (experts % ep == 0 && fsdp % ep == 0 && ep % cp == 0) return ep;
  }
  return 1;
}

const RuntimeRules& prime_rl_rules() {
  static const PrimeRlRules rules{PrimeRlRun{}};
  return rules;
}

std::shared_ptr<const RuntimeRules> prime_rl_rules_on(const std::string& version) {
  check_prime_rl_version(version);
  PrimeRlRun run;
  run.version = version;
  return std::make_shared<PrimeRlRules>(run);
}

std::shared_ptr<const RuntimeRules> prime_rl_rules_for(const PrimeRlRun& run) {
  check_prime_rl_version(run.version);
  return std::make_shared<PrimeRlRules>(run);
}

}  // namespace muonplan
