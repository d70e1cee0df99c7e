// The prime-rl trainer-config keys muonplan knows (docs/trainer-config.md): one table that the
// reader (trainer_config_in.cc) checks a file against and every writer (--emit prime-rl,
// the keys-to-change of an alternative) takes its key names from.
#pragma once

#include <string>
#include <vector>

namespace muonplan {

// Tables by role; where they sit in a file depends on its kind (prime_rl_table):
//   "model"  [trainer.model] (RL) / [model] (SFT, trainer)   "optim" [trainer.optim] / [optim]
//   "deployment", "data" (SFT, trainer), "orchestrator" (RL), "shared" ([model] in RL), "" top,
//   "muonplan": `# muonplan: key = value` comments, for settings prime-rl has no key for.
enum class KeyType { integer, number, boolean, string, section, opaque, int_or_word, list };

struct TrainerKey {
  const char* table;
  const char* key;  // dotted inside sections: "ac.mode"
  KeyType type;
  bool planned;         // false: read and accepted, no effect on the plan
  const char* meaning;  // for --explain and the docs: what muonplan does with it
};

const std::vector<TrainerKey>& trainer_keys();
const TrainerKey* find_trainer_key(const std::string& table, const std::string& key);
// A writer's key: std::logic_error when the table lacks it, so no writer names a key the
// reader would warn about.
const TrainerKey& trainer_key(const std::string& table, const std::string& key);
// The table's header in a file of this kind: prime_rl_table("model", false) is "trainer.model"
// (RL); SFT and standalone trainer files keep [model] and [optim] at the top (top_level).
std::string prime_rl_table(const std::string& table, bool top_level);
// The name prime-rl of `date` (YYYY-MM-DD; "" the newest) gives the key written `key` today,
// from the one key-era table (prime_rl_versions.cc, key_eras): `key` inside its era, the older
// or newer name outside it ("fused_lm_head_token_chunk_size" on 2026-02-20 is
// "fused_lm_head_chunk_size"), "" where prime-rl of that date has no such key.
std::string prime_rl_key_on(const std::string& table, const std::string& key, bool sft,
                            const std::string& date);
// Tables inside which an unknown key is a warning (the planning tables).
bool is_planning_table(const std::string& table);

}  // namespace muonplan
