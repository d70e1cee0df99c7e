// prime-rl's defaults by date (docs/trainer-config.md, "Versions"): the one table of the default
// changes muonplan follows, from prime-rl's commits (each cited in that table of the docs). A
// file planned with --prime-rl-version DATE gets the defaults in force on that date; without
// it, the newest the table knows.
#include <cctype>
#include <vector>

#include "base/calendar_date.h"
#include "muonplan/planner/prime_rl.h"
#include "trainer_file.h"

namespace muonplan::detail {
namespace {

constexpr const char* kNewest = "2026-08-21";      // v0.8.1.dev67, the schema the key table follows
constexpr const char* kDefaultsOn = "2026-06-26";  // c5afcaa2e (#2868): AC, offload, ep auto on
// RL's fused LM head when the file is silent. #1544 (2026-01-05, the changelog's date) made the
// RL trainer set 2048 (vocabulary rows, roofline.cc) where unset; #1649 (2026-01-23) kept that as
// the default "auto"; #1904 (2026-02-26) made the default "disabled" (the vanilla head, whole
// logits) until c5afcaa2e made it 1024 tokens.
constexpr const char* kHead2048 = "2026-01-05";  // #1544: RL auto-sets 2048 rows
constexpr const char* kHeadOff = "2026-02-26";   // #1904: default "disabled"
constexpr const char* kHead1024 = "2026-06-26";  // c5afcaa2e: fused head 1024 by default
constexpr const char* kHead8192 = "2026-08-19";  // 2acb19ecc (#3302): fused head 8192
// A written "auto": 2048 until 83c21ddac (#1892, 2026-02-26) made the RL validator set 8192.
constexpr const char* kAuto8192 = "2026-02-26";
// #1480 (opened 2025-12-24): rl.py starts the trainer with expandable segments.
constexpr const char* kExpandable = "2025-12-24";

// The eras of the keys whose presence changed (docs/trainer-config.md, "Key eras"): a key is
// in prime-rl's schema from `since` (inclusive) until `until` (exclusive); "" is open. `renamed`
// is the name that replaced it (or that it replaced, for a key with a `since`). Sub-keys of a
// section share its era. Each row cites the prime-rl commit that made the change.
struct KeyEra {
  const char* table;
  const char* key;
  bool sft_only;  // the change was to the SFT schema only
  const char* since;
  const char* until;
  const char* renamed;
  const char* commit;
};

const std::vector<KeyEra>& key_eras() {
  static const std::vector<KeyEra> eras = {
      {"model", "fused_lm_head_chunk_size", false, "", "2026-03-09",
       "fused_lm_head_token_chunk_size", "93cd1fa37 (#1987)"},
      {"model", "fused_lm_head_token_chunk_size", false, "2026-03-09", "",
       "fused_lm_head_chunk_size", "93cd1fa37 (#1987)"},
      {"model", "optim_cpu_offload", false, "2026-02-03", "", "", "e41036a16 (#1694)"},
      {"model", "full_offload", false, "2026-08-15", "", "", "b8d9553c0 (#3234)"},
      {"deployment", "num_gpus", true, "", "2026-08-17", "num_train_gpus", "15d6c8197 (#3256)"},
      {"deployment", "num_nodes", true, "", "2026-08-17", "num_train_nodes", "15d6c8197 (#3256)"},
      {"deployment", "num_train_gpus", true, "2026-08-17", "", "num_gpus", "15d6c8197 (#3256)"},
      {"deployment", "num_train_nodes", true, "2026-08-17", "", "num_nodes", "15d6c8197 (#3256)"},
      {"model", "tp", false, "", "2026-03-26", "", "effa509cb (#2109)"},
      {"model", "cp_style", false, "2026-05-05", "", "", "95af0118d (#2418)"},
      // rollouts_per_example stayed an alias of group_size after #2599 (dropped in d612e23c1,
      // #3156, whose date the table lacks): only group_size's start is an era.
      {"orchestrator", "group_size", false, "2026-05-22", "", "rollouts_per_example",
       "20f6449e1 (#2599)"},
      // SFT's cp: the date issue 50 gives; #739 (opened 2025-08-16) added cp and tp to the
      // config, and its merge commit is not in the sources searched.
      {"model", "cp", true, "2025-08-31", "", "", "#739"},
      // A whole table ("*"): [deployment] came with #1859 (opened 2026-02-23, the date issue 50
      // gives as 2026-02-24), which merged the rl and rl_slurm launchers; before it an RL
      // file's world is trainer_gpu_ids or rl_slurm's top-level keys.
      {"deployment", "*", false, "2026-02-24", "", "", "#1859"},
      // The trainer's env table: [trainer.env_vars] (#2863, opened 2026-06-24, "configurable
      // env vars"; top-level [env_vars] followed in #2897, 2026-06-28). The writer writes the
      // allocator there from this date only.
      {"trainer", "env_vars", false, "2026-06-24", "", "", "#2863"},
  };
  return eras;
}

bool inside(const KeyEra& e, const std::string& date) {
  return date >= e.since && (!*e.until || date < e.until);  // ISO dates compare as text
}

// The row of `key` or of the section it sits in ("full_offload.numa_bind" -> "full_offload").
const KeyEra* find_key_era(const std::string& table, const std::string& key, bool sft) {
  const std::string head = key.substr(0, key.find('.'));
  for (const KeyEra& e : key_eras()) {
    if (table == e.table && head == e.key && (sft || !e.sft_only)) return &e;
  }
  return nullptr;
}

// The table's row ("*") where `date` lies outside it (every key of it is then outside), else
// the key's own row.
const KeyEra* find_era(const std::string& table, const std::string& key, bool sft,
                       const std::string& date) {
  const KeyEra* whole = find_key_era(table, "*", sft);
  if (whole && !date.empty() && !inside(*whole, date)) return whole;
  return find_key_era(table, key, sft);
}

}  // namespace
}  // namespace muonplan::detail

namespace muonplan {

std::string prime_rl_key_on(const std::string& table, const std::string& key, bool sft,
                            const std::string& date) {
  const detail::KeyEra* e = date.empty() ? nullptr : detail::find_era(table, key, sft, date);
  if (!e || detail::inside(*e, date)) return key;
  if (!*e->renamed) return "";
  const detail::KeyEra* other = detail::find_era(table, e->renamed, sft, date);
  if (other && !detail::inside(*other, date)) return "";
  const size_t dot = key.find('.');  // a section's sub-key keeps its tail
  return e->renamed + (dot == std::string::npos ? "" : key.substr(dot));
}

}  // namespace muonplan

namespace muonplan::detail {

std::string key_era_problem(const std::string& table, const std::string& key, bool sft,
                            const std::string& date) {
  const KeyEra* e = find_era(table, key, sft, date);
  if (!e || inside(*e, date)) return "";
  if (std::string(e->key) == "*") {
    return "prime-rl of " + date + " has no [" + table +
           "] table (it forbids extra keys): its era is from " + e->since + ", " + e->commit;
  }
  const std::string era = *e->since ? std::string("from ") + e->since : "";
  const std::string end = *e->until ? std::string("until ") + e->until : "";
  std::string why = "prime-rl of " + date +
                    " has no such key (it forbids extra keys): its era is " + era +
                    (era.empty() || end.empty() ? "" : " ") + end + ", " + e->commit;
  if (*e->renamed) why += std::string("; on ") + date + " the key is " + e->renamed;
  return why;
}

PrimeRlDefaults prime_rl_defaults(const std::string& version) {
  const std::string date = version.empty() ? kNewest : version;
  if (!is_calendar_date(date))
    throw InputError({}, "--prime-rl-version", kCalendarDateExpected + brief(date) + "'");
  PrimeRlDefaults d;
  d.date = date;
  d.dated = !version.empty();
  d.newest = date >= kNewest;
  const bool on = date >= kDefaultsOn;  // ISO dates compare as text
  d.optim_cpu_offload = d.ac = d.ac_offloading = d.ep_auto = on;
  d.lm_head_chunk = date >= kHead8192   ? 8192
                    : date >= kHead1024 ? 1024
                    : date >= kHeadOff  ? 0
                    : date >= kHead2048 ? 2048
                                        : 0;
  d.lm_head_auto_chunk = date >= kAuto8192 ? 8192 : 2048;
  d.expandable_segments = date >= kExpandable;
  return d;
}

}  // namespace muonplan::detail

namespace muonplan {
void check_prime_rl_version(const std::string& version) {
  detail::prime_rl_defaults(version);
}

PrimeRlEra prime_rl_era(const std::string& date) {
  const detail::PrimeRlDefaults d = detail::prime_rl_defaults(date);
  return {d.optim_cpu_offload, d.ac, d.ac_offloading, d.lm_head_chunk};
}
}  // namespace muonplan

namespace muonplan::detail {

std::vector<std::string> default_differences(const PrimeRlDefaults& now,
                                             const PrimeRlDefaults& then) {
  std::vector<std::string> out;
  auto on = [](bool b) { return std::string(b ? "on" : "off"); };
  if (now.optim_cpu_offload != then.optim_cpu_offload)
    out.push_back("optim_cpu_offload " + on(then.optim_cpu_offload) + " (offload, host RAM)");
  if (now.ep_auto != then.ep_auto)
    out.push_back(std::string("ep ") + (then.ep_auto ? "auto" : "1") + " (layout, all-to-all)");
  if (now.ac != then.ac) out.push_back("ac " + on(then.ac) + " (activations, step time)");
  if (now.ac_offloading != then.ac_offloading)
    out.push_back("ac_offloading " + on(then.ac_offloading) + " (GPU peak, host RAM)");
  if (now.lm_head_chunk != then.lm_head_chunk)  // the key's name on `then` (key_eras)
    out.push_back(prime_rl_key_on("model", "fused_lm_head_token_chunk_size", false, then.date) +
                  " " + (then.lm_head_chunk ? std::to_string(then.lm_head_chunk) : "disabled") +
                  " (GPU peak)");
  return out;
}

}  // namespace muonplan::detail
