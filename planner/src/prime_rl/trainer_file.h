// The trainer-config file as the readers see it: each table's known keys, flattened to dotted
// names, with typed accessors that fail at the value's line and column.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "prime_rl/toml_tree.h"
#include "prime_rl/trainer_config_in.h"
#include "prime_rl/trainer_keys.h"

namespace muonplan::detail {

// prime-rl's defaults on one date (prime_rl_versions.cc), where a file is silent.
struct PrimeRlDefaults {
  std::string date;
  bool newest = true;  // the newest version the table knows
  bool dated = false;  // --prime-rl-version given: keys outside their era are refused
  bool optim_cpu_offload = true, ac = true, ac_offloading = true, ep_auto = true;
  int64_t lm_head_chunk = 8192;       // RL's fused head; 0: disabled
  int64_t lm_head_auto_chunk = 8192;  // what a written "auto" meant for RL
  // The launcher's PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (from #1480, 2025-12-24;
  // before it PyTorch's default allocator).
  bool expandable_segments = true;
};
// InputError "--prime-rl-version: ..." unless `version` is empty (the newest) or YYYY-MM-DD.
PrimeRlDefaults prime_rl_defaults(const std::string& version);
// The defaults `then` has other than `now`, each with the figures it moves.
std::vector<std::string> default_differences(const PrimeRlDefaults& now,
                                             const PrimeRlDefaults& then);

// Why prime-rl of `date` refuses this key (its configs forbid extra keys): the key's era in
// prime_rl_versions.cc, its citation and its name at that date; "" inside the era.
std::string key_era_problem(const std::string& table, const std::string& key, bool sft,
                            const std::string& date);

class TrainerFile {
 public:
  TrainerFile(std::string path, bool sft, bool standalone, PrimeRlDefaults defaults)
      : path_(std::move(path)),
        sft_(sft),
        standalone_(standalone),
        defaults_(std::move(defaults)) {}
  const PrimeRlDefaults& defaults() const { return defaults_; }
  void add(const std::string& table, const std::string& key, const TomlNode* node) {
    keys_[table][key] = node;
  }
  const std::string& path() const { return path_; }
  bool sft() const { return sft_; }
  bool standalone() const { return standalone_; }  // a `trainer @ FILE` file
  const TomlNode* get(const std::string& table, const std::string& key) const;
  std::string field(const std::string& table, const std::string& key) const;
  SourceLoc at(const TomlNode& n) const { return {path_, n.line, n.col}; }
  [[noreturn]] void fail(const std::string& table, const std::string& key,
                         const std::string& message) const;
  std::string shown(const std::string& table, const std::string& key) const;

  // Typed reads; `fallback` when the file is silent. Integers must be >= 1.
  int64_t integer(const std::string& table, const std::string& key, int64_t fallback) const;
  double number(const std::string& table, const std::string& key, double fallback) const;
  bool boolean(const std::string& table, const std::string& key, bool fallback) const;
  std::string string(const std::string& table, const std::string& key,
                     const std::string& fallback) const;
  // A section: absent -> fallback; the string "None" -> off; a table (or true) -> on.
  bool section(const std::string& table, const std::string& key, bool fallback) const;

  // A FileValue for `flag`, located at the key (or "(default)" when absent).
  FileValue value(const std::string& flag, const std::string& text, const std::string& table,
                  const std::string& key) const;

 private:
  std::string path_;
  bool sft_, standalone_;
  PrimeRlDefaults defaults_;
  std::map<std::string, std::map<std::string, const TomlNode*>> keys_;
};

// Rows are dealt out whole to `workers` (world / cp): the tokens of whole rows, rounded up.
int64_t whole_rows(int64_t tokens, int64_t seq_len, int64_t workers);

// prime_rl_batch.cc: a warning at the value of table.key, which the file sets: "PATH:LINE:COL:
// FIELD: message".
void warn_at(const TrainerFile& f, TrainerConfig& tc, const std::string& table,
             const std::string& key, const std::string& message);

// prime_rl_in.cc: the planning tables into tc.
void read_deployment(const TrainerFile& f, TrainerConfig& tc);
void read_parallel(const TrainerFile& f, TrainerConfig& tc);
void read_offload_and_optimizer(const TrainerFile& f, TrainerConfig& tc);
void read_batch(const TrainerFile& f, TrainerConfig& tc);
// Why optim_cpu_offload is on, for a refusal that it is: "the file sets optim_cpu_offload =
// true", or "optim_cpu_offload defaults to true on DATE" (the era's default: the version table).
std::string optim_cpu_offload_on(const TrainerFile& f);
// prime_rl_lora.cc: [model.lora] and max_concurrent_runs into the --lora-* flags.
void read_lora(const TrainerFile& f, TrainerConfig& tc);
void warn_unmodelled(const TrainerFile& f, TrainerConfig& tc);

}  // namespace muonplan::detail
