// `--trainer-config FILE`: toml++'s tree (toml_tree.h) checked against the key table
// (trainer_keys.h), then read table by table (prime_rl_in.cc) and applied to the plan flags.
#include "prime_rl/trainer_config_in.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <sstream>

#include "muonplan/base/io.h"
#include "muonplan/planfile/plan_checks.h"
#include "prime_rl/prime_rl_rules.h"
#include "trainer_file.h"

namespace muonplan {
namespace detail {

const TomlNode* TrainerFile::get(const std::string& table, const std::string& key) const {
  const auto t = keys_.find(table);
  if (t == keys_.end()) return nullptr;
  const auto k = t->second.find(key);
  return k == t->second.end() ? nullptr : k->second;
}

std::string TrainerFile::field(const std::string& table, const std::string& key) const {
  const std::string t = prime_rl_table(table, sft_ || standalone_);
  return t.empty() ? key : t + "." + key;
}

void TrainerFile::fail(const std::string& table, const std::string& key,
                       const std::string& message) const {
  const TomlNode* n = get(table, key);
  throw InputError(n ? at(*n) : SourceLoc{path_, 0, 0}, field(table, key), message);
}

std::string TrainerFile::shown(const std::string& table, const std::string& key) const {
  const TomlNode* n = get(table, key);
  return n ? field(table, key) + " = " + n->shown() : field(table, key) + " (prime-rl default)";
}

int64_t TrainerFile::integer(const std::string& table, const std::string& key,
                             int64_t fallback) const {
  const TomlNode* n = get(table, key);
  if (!n) return fallback;
  if (n->kind != TomlNode::Kind::integer)
    fail(table, key, "expected an integer, got " + n->shown());
  if (n->integer < 1 || n->integer > INT32_MAX)
    fail(table, key, "expected a positive integer below 2^31, got " + n->shown());
  return n->integer;
}

double TrainerFile::number(const std::string& table, const std::string& key,
                           double fallback) const {
  const TomlNode* n = get(table, key);
  if (!n) return fallback;
  if (!n->is_number()) fail(table, key, "expected a number, got " + n->shown());
  return n->number();
}

bool TrainerFile::boolean(const std::string& table, const std::string& key, bool fallback) const {
  const TomlNode* n = get(table, key);
  if (!n) return fallback;
  if (n->kind != TomlNode::Kind::boolean)
    fail(table, key, "expected true or false, got " + n->shown());
  return n->boolean;
}

std::string TrainerFile::string(const std::string& table, const std::string& key,
                                const std::string& fallback) const {
  const TomlNode* n = get(table, key);
  if (!n) return fallback;
  if (n->kind != TomlNode::Kind::string) fail(table, key, "expected a string, got " + n->shown());
  if (const std::string why = text_problem(n->str); !why.empty()) fail(table, key, why);
  return n->str;
}

bool TrainerFile::section(const std::string& table, const std::string& key, bool fallback) const {
  const TomlNode* n = get(table, key);
  if (!n) return fallback;
  if (n->kind == TomlNode::Kind::table) return true;
  if (n->kind == TomlNode::Kind::boolean) return n->boolean;
  if (n->kind == TomlNode::Kind::string && n->str == "None") return false;
  fail(table, key, "expected a table, true/false or \"None\", got " + n->shown());
}

FileValue TrainerFile::value(const std::string& flag, const std::string& text,
                             const std::string& table, const std::string& key) const {
  const TomlNode* n = get(table, key);
  return {flag, text, n ? at(*n) : SourceLoc{path_, 0, 0}, shown(table, key)};
}

}  // namespace detail

namespace {

using detail::TrainerFile;

// Records the known keys of one table (sections flattened to "ac.mode"); an unknown key in a
// planning table is a warning naming its line.
void collect(TrainerFile& f, TrainerConfig& tc, const std::string& table, const TomlNode& node,
             const std::string& prefix) {
  for (const auto& [k, v] : node.members) {
    const std::string key = prefix + k;
    const TrainerKey* known = find_trainer_key(table, key);
    if (!known) {
      // The first kMaxListedUnknownKeys each get a line; the rest a count (60,000 unknown
      // keys were 60,000 lines).
      if ((is_planning_table(table) || table == "muonplan") &&
          ++tc.unknown_keys <= kMaxListedUnknownKeys) {
        tc.warnings.push_back(key_at(tc.path, v) + printable(brief(f.field(table, key))) +
                              ": unknown key in [" + prime_rl_table(table, tc.top_level()) +
                              "]; not planned");
      }
      continue;
    }
    if (f.defaults().dated) {
      const std::string why = detail::key_era_problem(table, key, tc.sft, f.defaults().date);
      if (!why.empty())
        throw InputError({tc.path, v.key_line, v.key_col}, printable(f.field(table, key)), why);
    }
    f.add(table, key, &v);
    if (known->type == KeyType::section && v.kind == TomlNode::Kind::table)
      collect(f, tc, table, v, key + ".");
  }
}

// The tables a file's kind plans from; every other table is listed as ignored.
void collect_tables(TrainerFile& f, TrainerConfig& tc, const TomlNode& root) {
  const TomlNode* trainer = root.get("trainer");
  std::vector<std::pair<std::string, const TomlNode*>> planned;
  if (tc.top_level()) {
    for (const char* t : {"model", "optim", "data", "deployment"})
      planned.push_back({t, root.get(t)});
  } else {
    planned = {{"model", trainer ? trainer->get("model") : nullptr},
               {"optim", trainer ? trainer->get("optim") : nullptr},
               {"shared", root.get("model")},
               {"deployment", root.get("deployment")},
               {"orchestrator", root.get("orchestrator")},
               {"trainer", trainer},  // its own keys: max_concurrent_runs (LoRA slots)
               {"slurm", root.get("slurm")}};
  }
  // A planning table of another kind (`model = "Qwen/Qwen3-8B"`, [[deployment]], `orchestrator
  // = true`) would be passed over and planned as prime-rl's defaults: prime-rl refuses it.
  for (const auto& [t, node] : planned) {
    if (!node || node->kind == TomlNode::Kind::table) continue;
    const std::string name = t == "shared" ? "model" : prime_rl_table(t, tc.top_level());
    const std::string got = node->kind == TomlNode::Kind::array && !node->items.empty() &&
                                    node->items.front().kind == TomlNode::Kind::table
                                ? "an array of tables ([[" + name + "]])"
                                : node->shown();
    throw InputError(f.at(*node), name, "expected a table ([" + name + "]), got " + got);
  }
  for (const auto& [k, v] : root.members) {
    if (v.kind != TomlNode::Kind::table) {  // top-level keys: seq_len, older num_nodes, ...
      if (find_trainer_key("", k)) f.add("", k, &v);
      continue;
    }
    const bool read = tc.top_level()
                          ? (k == "model" || k == "optim" || k == "data" || k == "deployment")
                          : (k == "model" || k == "deployment" || k == "orchestrator" ||
                             k == "trainer" || k == "slurm");
    // [env_vars]: read_allocator; an RL trainer's [weight_broadcast]: read_weight_broadcast.
    const bool read_elsewhere = k == "env_vars" || (k == "weight_broadcast" && !tc.sft);
    if (!read && !read_elsewhere) tc.ignored.push_back("[" + k + "]");
    if (k == "workload" || k == "muonplan") {  // what --emit toml wrote before --emit prime-rl
      tc.warnings.push_back(key_at(tc.path, v) + k +
                            ": an older muonplan --emit toml table, not read; write the file "
                            "again with --emit prime-rl");
    }
    if (!tc.top_level() && (k == "trainer" || k == "orchestrator")) {
      for (const auto& [sub, sv] : v.members) {
        const bool planned_sub = k == "trainer" && (sub == "model" || sub == "optim" ||
                                                    sub == "env_vars" || sub == "weight_broadcast");
        if (sv.kind == TomlNode::Kind::table && !planned_sub)
          tc.ignored.push_back("[" + k + "." + sub + "]");
      }
    }
  }
  for (const auto& [t, node] : planned) {
    if (node && node->kind == TomlNode::Kind::table) collect(f, tc, t, *node, "");
  }
}

// `# muonplan: key = value` lines, parsed as TOML in place (the same lines and columns).
TomlNode muonplan_comments(const std::string& text, const std::string& path) {
  std::istringstream in(text);
  std::string line, doc;
  const std::string tag = "muonplan:";
  while (std::getline(in, line)) {
    const size_t hash = line.find_first_not_of(" \t");
    const size_t word = hash == std::string::npos ? hash : line.find_first_not_of(" \t#", hash);
    const bool ours =
        word != std::string::npos && line[hash] == '#' && line.compare(word, tag.size(), tag) == 0;
    if (ours) {
      const size_t from = line.find(tag) + tag.size();
      doc += std::string(from, ' ') + line.substr(from);
    }
    doc += "\n";
  }
  return parse_toml(doc, path);
}

// The schema, by what only one schema has: [trainer], [orchestrator] or an rl launcher's world
// keys are RL; [data] with SFT's keys (anything but fake) is SFT; [data.fake], [loss],
// [weight_broadcast] or [model] seq_len is the standalone trainer's (`trainer @ FILE`). Online
// evals put [inference] in SFT files too, so it decides nothing. Else SFT: prime-rl's RLConfig
// takes its trainer and orchestrator from [trainer] and [orchestrator], so a file with neither
// is not an RL file (configs/ci/slim_sft.toml, [model] and top-level keys, was read as RL).
void set_schema(const TomlNode& root, TrainerConfig& tc) {
  for (const char* k : {"trainer", "orchestrator", "trainer_gpu_ids", "inference_gpu_ids",
                        "num_train_nodes", "num_training_nodes", "num_infer_nodes"}) {
    if (root.get(k)) return;
  }
  const TomlNode* data = root.get("data");
  const TomlNode* model = root.get("model");
  const bool is_table = data && data->kind == TomlNode::Kind::table;
  if (is_table && std::any_of(data->members.begin(), data->members.end(),
                              [](const auto& m) { return m.first != "fake"; })) {
    tc.sft = true;
    return;
  }
  const bool model_table = model && model->kind == TomlNode::Kind::table;
  if ((is_table && data->get("fake")) || root.get("loss") || root.get("weight_broadcast") ||
      (model_table && model->get("seq_len"))) {
    tc.standalone = true;
    return;
  }
  tc.sft = true;
}

void read_model_name(const TrainerFile& f, TrainerConfig& tc) {
  const char* table = f.get("model", "name") || f.sft() || f.standalone() ? "model" : "shared";
  tc.model_name = f.string(table, "name", "Qwen/Qwen3-0.6B");
  if (const TomlNode* n = f.get(table, "name")) {
    tc.model_at = f.at(*n);
  } else {
    tc.model_at = {tc.path, 0, 0};
    tc.notes.push_back("[model] name: not given, prime-rl's default " + tc.model_name);
  }
}

}  // namespace

int TrainerConfig::resolved_ep(const ModelSpec& spec, int world) const {
  if (ep > 0) return ep;
  return prime_rl_auto_ep(spec, world / dp_replicate, cp);
}

const FileValue* TrainerConfig::value(const std::string& flag) const {
  for (const FileValue& v : values) {
    if (v.flag == flag) return &v;
  }
  return nullptr;
}

namespace {

// Keys of older schemas: without --prime-rl-version the file is planned with the newest
// defaults, and the answer says which of them an older prime-rl had otherwise.
void note_version(const TrainerFile& f, TrainerConfig& tc, bool given) {
  const detail::PrimeRlDefaults newest = detail::prime_rl_defaults("");
  const std::pair<const char*, const char*> older[] = {{"model", "fused_lm_head_chunk_size"},
                                                       {"orchestrator", "rollouts_per_example"},
                                                       {"deployment", "num_nodes"},
                                                       {"deployment", "num_gpus"},
                                                       {"", "num_nodes"},
                                                       {"", "num_train_nodes"},
                                                       {"", "num_training_nodes"},
                                                       {"", "trainer_gpu_ids"},
                                                       {"model", "fp8"}};
  const char* const* old = nullptr;
  for (const auto& k : older) {
    if (f.get(k.first, k.second) && !old) old = &k.second;
  }
  const bool at_newest = f.defaults().date == newest.date;
  if (given && !at_newest) {
    std::string changed;
    for (const std::string& d : detail::default_differences(newest, f.defaults()))
      changed += (changed.empty() ? "" : "; ") + d;
    tc.notes.push_back("--prime-rl-version " + f.defaults().date + ": prime-rl's defaults of then" +
                       (changed.empty() ? " (as today's)" : ": " + changed));
    return;
  }
  if (given || !old) return;
  std::string changed;
  for (const std::string& d :
       detail::default_differences(newest, detail::prime_rl_defaults("2026-06-25"))) {
    const std::string key = d.substr(0, d.find(' '));
    const bool set = f.get("model", key) || (key == "fused_lm_head_token_chunk_size" &&
                                             f.get("model", "fused_lm_head_chunk_size"));
    if (!set) changed += (changed.empty() ? "" : "; ") + d;
  }
  tc.notes.push_back(std::string(*old) +
                     " is a key of an older prime-rl: planned with the "
                     "defaults of " +
                     newest.date + " (the newest known)" +
                     (changed.empty() ? "" : "; before 2026-06-26 prime-rl's were: " + changed) +
                     "; give --prime-rl-version DATE for the version run");
}

// The trainer's allocator: prime-rl's launcher starts every trainer with
// PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (utils/process.py DEFAULT_TRAINER_ENV_VARS;
// rl.py before it, from #1480, 2025-12-24: before that date PyTorch's default), then merges the
// config's env_vars and trainer.env_vars over it, so a file that sets the variable decides.
// PyTorch reads PYTORCH_ALLOC_CONF before the CUDA name.
void read_allocator(const TomlNode& root, const TrainerFile& f, TrainerConfig& tc) {
  const TomlNode* conf = nullptr;
  const char* conf_name = nullptr;
  const TomlNode* trainer = root.get("trainer");
  for (const TomlNode* env : {root.get("env_vars"), trainer ? trainer->get("env_vars") : nullptr}) {
    if (!env || env->kind != TomlNode::Kind::table) continue;
    for (const char* name : {"PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"}) {
      const TomlNode* c = env->get(name);
      if (c && c->kind == TomlNode::Kind::string) conf = c, conf_name = name;
    }
  }
  if (!conf) {
    if (f.defaults().expandable_segments) {
      tc.values.push_back(
          {"allocator", "expandable", SourceLoc{tc.path, 0, 0},
           "prime-rl's launcher sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"});
    } else {
      tc.values.push_back({"allocator", "default", SourceLoc{tc.path, 0, 0},
                           "prime-rl's launcher of " + f.defaults().date +
                               " sets no PYTORCH_CUDA_ALLOC_CONF (from #1480, 2025-12-24)"});
    }
    return;
  }
  std::string c = conf->str;
  c.erase(std::remove(c.begin(), c.end(), ' '), c.end());
  std::transform(c.begin(), c.end(), c.begin(), [](unsigned char ch) { return std::tolower(ch); });
  const bool on = c.find("expandable_segments:true") != std::string::npos ||
                  c.find("expandable_segments:1") != std::string::npos;
  tc.values.push_back({"allocator", on ? "expandable" : "default",
                       SourceLoc{tc.path, conf->line, conf->col},
                       std::string(conf_name) + " = " + conf->shown()});
}

// The RL trainer's weight broadcast (trainer/rl/broadcast/): `filesystem`, prime-rl's default,
// and `nccl` (a gather per tensor, then an NCCL broadcast from rank 0 to the inference GPUs) are
// what between_steps_s times (cost/weight_broadcast.h); any other type (`nixl` in some forks) is
// not modelled, and a plan that timed it as the filesystem's without saying so would be
// confidently wrong: a warning at its line. Which table decides: in an rl launcher file the
// shared [weight_broadcast] when it names a type (rl.py's auto_setup_weight_broadcast overwrites
// the trainer's and the orchestrator's with it), else [trainer.weight_broadcast]; a standalone
// trainer file's [weight_broadcast]. SFT has none.
void read_weight_broadcast(const TomlNode& root, TrainerConfig& tc) {
  if (tc.sft) return;
  auto type_of = [](const TomlNode* table) -> const TomlNode* {
    if (!table || table->kind != TomlNode::Kind::table) return nullptr;
    const TomlNode* type = table->get("type");
    return type && type->kind == TomlNode::Kind::string ? type : nullptr;
  };
  const TomlNode* type = type_of(root.get("weight_broadcast"));
  std::string prefix;
  if (!type && !tc.standalone) {
    const TomlNode* trainer = root.get("trainer");
    type = type_of(trainer ? trainer->get("weight_broadcast") : nullptr);
    prefix = "trainer.";
  }
  if (!type || type->str == "filesystem") return;
  const std::string at = key_at(tc.path, *type) + prefix + "weight_broadcast.type = ";
  if (type->str == "nccl") {
    tc.weight_broadcast = "nccl";
    // rl.py's auto_setup_lora refuses it: "NCCL weight broadcast does not support LoRA yet."
    const FileValue* rank = tc.value("lora-rank");
    if (rank && rank->text != "0") {
      tc.warnings.push_back(at +
                            "\"nccl\" with LoRA: prime-rl's rl launcher refuses it (\"NCCL weight "
                            "broadcast does not support LoRA yet\"); planned with the filesystem "
                            "broadcast's figure");
      return;
    }
    tc.notes.push_back(at +
                       "\"nccl\": between steps timed as prime-rl's NCCL broadcast (a gather per "
                       "layer, rank 0's broadcast to the inference GPUs)");
    return;
  }
  tc.warnings.push_back(at + printable(brief(type->str)) +
                        ": not modelled: the plan's between-steps time is the filesystem "
                        "broadcast's (prime-rl's default), not this one's");
}

// prime-rl refuses a multi_node [deployment] without a [slurm] table (validate_deployment:
// "Must use SLURM for multi-node deployment.", since #1859 made [deployment], 2026-02-23): with
// --prime-rl-version, as its era checks refuse a key, the file is refused; without, a warning.
void check_slurm(const TomlNode& root, const TrainerFile& f, TrainerConfig& tc) {
  if (tc.standalone || tc.single_node || tc.world_table != "deployment" || root.get("slurm"))
    return;
  const TomlNode* type = f.get("deployment", "type");
  if (!type || f.string("deployment", "type", "") != "multi_node") return;
  const std::string why =
      "multi_node runs only under SLURM: prime-rl refuses it without a [slurm] table "
      "(validate_deployment, #1859, 2026-02-23); add [slurm] (each field has a default, "
      "job_name = \"prime-rl\")";
  if (f.defaults().dated) f.fail("deployment", "type", why);
  tc.warnings.push_back(key_at(tc.path, *type) + f.field("deployment", "type") + ": " + why);
}

}  // namespace

TrainerConfig read_trainer_config(const std::string& path, const std::string& version) {
  const std::string text = read_input_file(path);
  const TomlNode root = parse_toml(text, path);
  // An empty file is far likelier a config the shell emptied (`--emit prime-rl > FILE` onto its
  // own input) than a request for prime-rl's defaults: planning it would answer for Qwen3-0.6B.
  if (root.members.empty()) {
    throw InputError({path, 0, 0}, "--trainer-config",
                     "the file holds no keys (" + std::to_string(text.size()) +
                         " bytes): a trainer config names at least its model; an empty one is "
                         "not planned as prime-rl's defaults");
  }
  const TomlNode comments = muonplan_comments(text, path);
  TrainerConfig tc;
  tc.path = path;
  set_schema(root, tc);
  TrainerFile f(path, tc.sft, tc.standalone, detail::prime_rl_defaults(version));
  collect_tables(f, tc, root);
  collect(f, tc, "muonplan", comments, "");
  read_model_name(f, tc);
  detail::read_deployment(f, tc);
  check_slurm(root, f, tc);
  detail::read_parallel(f, tc);
  detail::read_offload_and_optimizer(f, tc);
  detail::read_lora(f, tc);
  detail::read_batch(f, tc);
  read_allocator(root, f, tc);
  detail::warn_unmodelled(f, tc);
  read_weight_broadcast(root, tc);
  if (tc.unknown_keys > kMaxListedUnknownKeys)
    tc.warnings.push_back(path + ": " + std::to_string(tc.unknown_keys - kMaxListedUnknownKeys) +
                          " more unknown keys in planning tables, not listed (the first " +
                          std::to_string(kMaxListedUnknownKeys) + " are); not planned");
  note_version(f, tc, !version.empty());
  return tc;
}

namespace {

std::string where(const FileValue& v) {
  return v.at.line > 0 ? v.at.file + ":" + std::to_string(v.at.line) + " (" + v.shown + ")"
                       : v.at.file + " (" + v.shown + ")";
}

// The flag keeps a value given on the command line; else it takes the file's.
void apply_value(const FileValue& v, PlanFlags& flags, std::vector<std::string>& overrides) {
  PlanFlags probe;  // the file's value, checked as the flag checks it, at the file's line
  try {
    set_plan_flag(probe, v.flag, v.text);
  } catch (const InputError& e) {
    throw InputError(v.at, v.shown.substr(0, v.shown.find(' ')), e.message());
  }
  const std::string given = plan_flag_value(flags, v.flag);
  if (given == plan_flag_value(PlanFlags{}, v.flag)) {
    set_plan_flag(flags, v.flag, v.text);
  } else if (plan_flag_value(probe, v.flag) != given) {
    overrides.push_back("--" + v.flag + " " + printable(brief(plan_flag_typed(flags, v.flag))) +
                        " overrides " + where(v));
  }
}

// --lr and --weight-decay name the file's optim.lr and optim.weight_decay, whichever optimizer
// reads them: an AdamW file reads optim.lr as --adamw-lr (what its step uses), and Muon's
// AdamW group takes optim.weight_decay as --adamw-weight-decay too. A flag given moves every
// value the file read from its key; --adamw-lr and --adamw-weight-decay keep their meaning.
bool lr_or_decay_given(const TrainerConfig& tc, const FileValue& v,
                       const std::map<std::string, std::string>& given, PlanFlags& flags,
                       std::vector<std::string>& overrides) {
  const char* sibling = v.flag == "adamw-lr"             ? "lr"
                        : v.flag == "adamw-weight-decay" ? "weight-decay"
                                                         : nullptr;
  if (!sibling || given.count(v.flag) || !given.count(sibling)) return false;
  const FileValue* own = tc.value(sibling);
  if (own && own->shown != v.shown) return false;  // read from another key
  const std::string typed = given.at(sibling);
  set_plan_flag(flags, v.flag, typed);
  flags.typed.erase(v.flag);
  overrides.push_back("--" + std::string(sibling) + " " + printable(brief(typed)) + " overrides " +
                      where(v) + ", which the file's optimizer reads as --" + v.flag);
  return true;
}

}  // namespace

void apply_trainer_config(const TrainerConfig& tc, const ModelSpec& spec, PlanFlags& flags,
                          std::vector<std::string>& overrides) {
  const bool workload_flag = !flags.workload.empty();
  const std::map<std::string, std::string> given = flags.typed;  // before the file's values
  for (const FileValue& v : tc.values) {
    if (v.flag == "ac-max-inflight") continue;  // no flag: set below
    if (lr_or_decay_given(tc, v, given, flags, overrides)) continue;
    const bool workload_key =
        v.flag == "tokens-per-step" || v.flag == "seq-len" || v.flag == "micro-batch-seqs" ||
        v.flag == "ac" || v.flag == "ac-targets" || v.flag == "ac-freq" || v.flag == "ac-offload" ||
        v.flag == "lm-head-chunk" || v.flag == "cp-style";
    if (workload_flag && workload_key) {
      overrides.push_back("--workload overrides " + where(v));
      continue;
    }
    // --ac none over a file whose activation offloading is on turns it off: prime-rl would
    // turn AC back on for it (read_activations), so the plan and the emit say AC off.
    if (v.flag == "ac-offload" && v.text == "true" && given.count("ac") &&
        given.at("ac") == "none" && !given.count("ac-offload")) {
      overrides.push_back("--ac none turns off " + where(v) +
                          " (prime-rl turns AC on under activation offloading)");
      continue;
    }
    apply_value(v, flags, overrides);
  }
  if (const FileValue* inflight = tc.value("ac-max-inflight")) {
    flags.ac_max_inflight = std::stoll(inflight->text);
  }
  // The weight broadcast's peers: on the trainer's node where the rl launcher runs inference
  // beside it on one node (the cost model keeps that to one-node candidates).
  flags.weight_broadcast = tc.weight_broadcast;
  flags.inference_on_trainer_node = tc.single_node;
  // Run by prime-rl (the default target of a trainer config), the file is its RL or SFT
  // trainer: the host work, AdamW and offloader are that trainer's (Workload::trainer, at
  // --prime-rl-version's date). --trainer keeps the user's; --runs-on muonplan has none.
  if (runs_on(flags, true) == "prime-rl") default_prime_rl_trainer(flags, tc.sft);
  // The file's dp_replicate, cp and ep on the world the flags now name (a --nodes given
  // changes fsdp = world / dp_replicate); a --nodes to_plan_request refuses gets no layout.
  const int64_t nodes = flags.nodes == "auto" ? tc.nodes : std::atoll(flags.nodes.c_str());
  const int64_t gpn = flags.gpus_per_node > 0 ? flags.gpus_per_node : tc.gpus_per_node;
  const int64_t world = nodes * gpn;
  if (nodes <= 0 || nodes > INT32_MAX || world > INT32_MAX) {
    flags.trainer_config.clear();
    return;
  }
  if (world % tc.dp_replicate != 0) {
    throw InputError(tc.layout_at, prime_rl_table("model", tc.top_level()) + ".dp_replicate",
                     std::to_string(tc.dp_replicate) + " does not divide the world of " +
                         std::to_string(world) + " GPUs");
  }
  if (tc.rl_tokens > 0 && flags.layout.empty() &&
      std::to_string(flags.tokens_per_step) == tc.value("tokens-per-step")->text) {
    const int64_t tokens = detail::whole_rows(tc.rl_tokens, tc.seq_len, world / tc.cp);
    if (tokens != flags.tokens_per_step) {
      overrides.push_back(std::to_string(tc.rl_tokens) + " tokens planned as " +
                          std::to_string(tokens) + ": whole rows of " + std::to_string(tc.seq_len) +
                          " for the " + std::to_string(world / tc.cp) + " workers of --nodes " +
                          flags.nodes);
      flags.tokens_per_step = tokens;
    }
  }
  const int64_t fsdp = world / tc.dp_replicate;
  const std::string layout = "fsdp=" + std::to_string(fsdp) + ",cp=" + std::to_string(tc.cp) +
                             ",ep=" + std::to_string(tc.resolved_ep(spec, static_cast<int>(world)));
  if (flags.layout.empty()) {
    flags.layout = layout;
  } else {
    overrides.push_back("--layout " + flags.layout + " overrides " + tc.path + " (" + layout + ")");
  }
  flags.trainer_config.clear();
}

void rethrow_at_file(const TrainerConfig& tc, const InputError& e,
                     const std::vector<std::string>& overrides) {
  const bool given = std::any_of(overrides.begin(), overrides.end(), [&](const std::string& o) {
    return o.rfind(e.field() + " ", 0) == 0;
  });
  if (e.loc().file.empty() && e.field().rfind("--", 0) == 0 && !given) {
    const FileValue* v = tc.value(e.field().substr(2));
    // The decay bound on a weight decay the file left at prime-rl's default: the file's lr
    // broke it, so the error is said of lr, where the file wrote it.
    const bool adamw = e.field() == "--adamw-weight-decay";
    if (v && v->at.line == 0 && (adamw || e.field() == "--weight-decay")) {
      const FileValue* lr = adamw && tc.value("adamw-lr") ? tc.value("adamw-lr") : tc.value("lr");
      if (lr && lr->at.line > 0)
        throw InputError(lr->at, lr->shown.substr(0, lr->shown.find(' ')),
                         decay_bound_on_lr(std::strtod(lr->text.c_str(), nullptr),
                                           std::strtod(v->text.c_str(), nullptr)));
    }
    if (v && v->at.line > 0)
      throw InputError(v->at, v->shown.substr(0, v->shown.find(' ')), e.message());
    if (e.field() == "--layout" && tc.layout_at.line > 0)
      throw InputError(tc.layout_at, prime_rl_table("model", tc.top_level()), e.message());
  }
  throw e;
}

}  // namespace muonplan
