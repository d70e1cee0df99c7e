// `--trainer-config FILE`: the TOML `--emit toml` writes, read back into plan flags. Only the
// TOML that trainer_config_toml writes is accepted (tables, bare keys, basic strings, decimal
// integers and floats, booleans, arrays nested once); anything else is an error at its line
// and column rather than a file half understood.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "muonplan/error.h"
#include "muonplan/io.h"
#include "muonplan/ns_schedule.h"
#include "muonplan/trainer_config_in.h"

namespace muonplan {
namespace {

struct Value {
  enum class Kind { string, integer, number, boolean, array } kind = Kind::string;
  std::string text;  // a string's contents; a number or boolean as written
  std::vector<Value> items;
  std::string source;  // as written, for messages
};

struct Entry {
  std::string table, key;
  int line = 0, key_col = 0, value_col = 0;
  Value value;
  std::string field() const { return table + "." + key; }
};

const std::vector<std::string> kTables = {"deployment", "model", "optim", "workload", "muonplan"};

enum class Type { integer, number, boolean, string, coefficients };
struct KeySpec {
  const char* table;
  const char* key;
  Type type;
  const char* flag;  // nullptr: derived from other keys, checked but not applied
};
// What trainer_config_toml writes. [optim] lr and weight_decay are the AdamW ones for
// type = "adamw" (apply_trainer_config maps them).
const std::vector<KeySpec> kKeys = {
    {"deployment", "num_nodes", Type::integer, "nodes"},
    {"deployment", "gpus_per_node", Type::integer, "gpus-per-node"},
    {"deployment", "world_size", Type::integer, nullptr},
    {"model", "offload", Type::string, "offload"},
    {"model", "fsdp_cpu_offload", Type::boolean, nullptr},
    {"model", "optim_cpu_offload", Type::boolean, nullptr},
    {"model", "dp_replicate", Type::integer, nullptr},
    {"model", "dp_shard", Type::integer, "layout"},
    {"model", "cp", Type::integer, "layout"},
    {"model", "ep", Type::integer, "layout"},
    {"optim", "type", Type::string, "optimizer"},
    {"optim", "lr", Type::number, "lr"},
    {"optim", "weight_decay", Type::number, "weight-decay"},
    {"optim", "mu", Type::number, "momentum"},
    {"optim", "nesterov", Type::boolean, "nesterov"},
    {"optim", "bf16_momentum", Type::boolean, "bf16-momentum"},
    {"optim", "update_rms", Type::number, "update-rms"},
    {"optim", "ns_schedule", Type::string, "ns-schedule"},
    {"optim", "newton_schulz_coefficients", Type::coefficients, "ns-schedule"},
    {"optim", "betas1", Type::number, "adamw-betas"},
    {"optim", "betas2", Type::number, "adamw-betas"},
    {"optim", "adamw_lr", Type::number, "adamw-lr"},
    {"optim", "adamw_weight_decay", Type::number, "adamw-weight-decay"},
    {"optim", "eps", Type::number, nullptr},
    {"workload", "seq_len", Type::integer, "seq-len"},
    {"workload", "tokens_per_step", Type::integer, "tokens-per-step"},
    {"workload", "micro_batch_seqs", Type::integer, "micro-batch-seqs"},
    {"workload", "ac", Type::string, "ac"},
    {"workload", "ac_offload", Type::boolean, "ac-offload"},
    {"workload", "lm_head_chunk", Type::integer, "lm-head-chunk"},
    {"workload", "cp_style", Type::string, "cp-style"},
    {"muonplan", "owners", Type::string, "owners"},
    {"muonplan", "offload_staging", Type::string, "offload-staging"},
    {"muonplan", "pinned_state", Type::boolean, "pinned-state"},
    {"muonplan", "include_mtp", Type::boolean, "include-mtp"},
    {"muonplan", "gpu_memory_gib", Type::number, "gpu-memory-gib"},
    {"muonplan", "host_ram_gib", Type::number, "host-ram-gib"},
    {"muonplan", "ns_schedule", Type::string, "ns-schedule"},
    {"muonplan", "newton_schulz_coefficients", Type::coefficients, "ns-schedule"},
};

const KeySpec* find_key(const std::string& table, const std::string& key) {
  for (const KeySpec& k : kKeys) {
    if (table == k.table && key == k.key) return &k;
  }
  return nullptr;
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

bool is_bare(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
}

// Decimal integer or float as TOML writes them, without underscores, inf or nan.
bool is_integer(const std::string& t) {
  size_t i = t[0] == '+' || t[0] == '-';
  if (i == t.size() || (t[i] == '0' && i + 1 < t.size())) return false;
  for (; i < t.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(t[i]))) return false;
  }
  return true;
}
bool is_float(const std::string& t) {
  size_t i = t[0] == '+' || t[0] == '-';
  auto digits = [&] {
    const size_t from = i;
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
    return i > from;
  };
  const size_t int_start = i;
  if (!digits() || (t[int_start] == '0' && i - int_start > 1)) return false;
  bool frac = false, exp = false;
  if (i < t.size() && t[i] == '.') {
    ++i;
    if (!(frac = digits())) return false;
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (!(exp = digits())) return false;
  }
  return i == t.size() && (frac || exp);
}

class Parser {
 public:
  Parser(const std::string& path, std::string text) : path_(path), s_(std::move(text)) {}

  std::vector<Entry> parse() {
    std::vector<Entry> entries;
    std::map<std::string, int> table_lines, key_lines;
    std::string table;
    while (skip_blank(), i_ < s_.size()) {
      if (at_newline()) {
        newline();
        continue;
      }
      if (s_[i_] == '[') {
        const int col = this->col();
        ++i_;
        if (i_ < s_.size() && s_[i_] == '[') fail("", "arrays of tables ([[...]]) are not read");
        skip_blank();
        table = bare_key();
        skip_blank();
        expect(']', table, "expected ']' after the table name");
        if (std::find(kTables.begin(), kTables.end(), table) == kTables.end()) {
          throw InputError({path_, line_, col}, table,
                           "unknown table; known: [" + join(kTables, "], [") + "]");
        }
        if (!table_lines.emplace(table, line_).second) {
          throw InputError({path_, line_, col}, table,
                           "table given twice, at lines " + std::to_string(table_lines[table]) +
                               " and " + std::to_string(line_));
        }
      } else if (s_[i_] != '#') {
        entries.push_back(entry(table, key_lines));
      }
      end_of_line();
    }
    return entries;
  }

 private:
  [[noreturn]] void fail(const std::string& field, const std::string& message) const {
    throw InputError({path_, line_, col()}, field, message);
  }
  int col() const { return static_cast<int>(i_ - line_start_) + 1; }
  bool at_newline() const {
    return s_[i_] == '\n' || (s_[i_] == '\r' && i_ + 1 < s_.size() && s_[i_ + 1] == '\n');
  }
  void newline() {
    i_ += s_[i_] == '\r' ? 2 : 1;
    ++line_;
    line_start_ = i_;
  }
  void skip_blank() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
  }
  void skip_comment() {
    while (i_ < s_.size() && !at_newline()) ++i_;
  }
  // Blanks, then an optional comment, then the line's end.
  void end_of_line() {
    skip_blank();
    if (i_ < s_.size() && s_[i_] == '#') skip_comment();
    if (i_ < s_.size() && !at_newline()) fail("", "expected the end of the line");
  }
  // Inside arrays values may continue on the next lines, with comments between them.
  void skip_space_in_array() {
    while (skip_blank(), i_ < s_.size()) {
      if (s_[i_] == '#') {
        skip_comment();
      } else if (at_newline()) {
        newline();
      } else {
        return;
      }
    }
  }
  void expect(char c, const std::string& field, const std::string& message) {
    if (i_ >= s_.size() || s_[i_] != c) fail(field, message);
    ++i_;
  }
  std::string bare_key() {
    const size_t start = i_;
    while (i_ < s_.size() && is_bare(s_[i_])) ++i_;
    if (i_ == start) fail("", "expected a bare key (letters, digits, _ and -)");
    return s_.substr(start, i_ - start);
  }

  Entry entry(const std::string& table, std::map<std::string, int>& key_lines) {
    Entry e;
    e.table = table;
    e.line = line_;
    e.key_col = col();
    e.key = bare_key();
    const std::string field = table.empty() ? e.key : e.field();
    if (table.empty()) {
      throw InputError({path_, line_, e.key_col}, field,
                       "a key outside a table; keys belong in [" + join(kTables, "], [") + "]");
    }
    if (!find_key(table, e.key)) {
      std::vector<std::string> known;
      for (const KeySpec& k : kKeys) {
        if (table == k.table) known.push_back(k.key);
      }
      throw InputError({path_, line_, e.key_col}, field,
                       "unknown key in [" + table + "]; known: " + join(known, ", "));
    }
    if (!key_lines.emplace(field, line_).second) {
      throw InputError({path_, line_, e.key_col}, field,
                       "given twice, at lines " + std::to_string(key_lines[field]) + " and " +
                           std::to_string(line_));
    }
    skip_blank();
    if (i_ < s_.size() && s_[i_] == '.') fail(field, "dotted keys are not read");
    expect('=', field, "expected '=' after the key");
    skip_blank();
    e.value_col = col();
    e.value = value(field, 0);
    return e;
  }

  Value value(const std::string& field, int depth) {
    const size_t start = i_;
    Value v;
    if (i_ < s_.size() && s_[i_] == '"') {
      ++i_;
      while (true) {
        if (i_ >= s_.size() || at_newline()) fail(field, "unterminated string");
        const char c = s_[i_];
        if (c == '"') break;
        if (c == '\\') {
          if (i_ + 1 >= s_.size() || (s_[i_ + 1] != '"' && s_[i_ + 1] != '\\'))
            fail(field, "only the escapes \\\" and \\\\ are read");
          ++i_;
        } else if (static_cast<unsigned char>(c) < 0x20 && c != '\t') {
          fail(field, "control character in a string");
        }
        v.text += s_[i_++];
      }
      ++i_;
    } else if (i_ < s_.size() && s_[i_] == '[') {
      if (depth >= 2) fail(field, "arrays nest at most two deep");
      v.kind = Value::Kind::array;
      ++i_;
      while (skip_space_in_array(), i_ >= s_.size() || s_[i_] != ']') {
        v.items.push_back(value(field, depth + 1));
        skip_space_in_array();
        if (i_ < s_.size() && s_[i_] == ',') {
          ++i_;
        } else if (i_ >= s_.size() || s_[i_] != ']') {
          fail(field, "expected ',' or ']' in the array");
        }
      }
      ++i_;
    } else {
      while (i_ < s_.size() && !std::isspace(static_cast<unsigned char>(s_[i_])) && s_[i_] != ',' &&
             s_[i_] != ']' && s_[i_] != '#')
        ++i_;
      v.text = s_.substr(start, i_ - start);
      const std::string& t = v.text;
      const std::string bare = t.empty() || (t[0] != '+' && t[0] != '-') ? t : t.substr(1);
      if (t == "true" || t == "false") {
        v.kind = Value::Kind::boolean;
      } else if (bare == "inf" || bare == "nan") {
        i_ = start;
        fail(field, "inf and nan are not accepted");
      } else if (!t.empty() && (is_integer(t) || is_float(t))) {
        v.kind = is_integer(t) ? Value::Kind::integer : Value::Kind::number;
        try {  // out of range of int64 or double
          if (v.kind == Value::Kind::integer) (void)std::stoll(t);
          if (v.kind == Value::Kind::number) (void)std::stod(t);
        } catch (const std::exception&) {
          i_ = start;
          fail(field, "out of range: " + t);
        }
      } else {
        i_ = start;
        fail(field, "expected a string, a number, true, false or an array, got '" + t + "'");
      }
    }
    v.source = s_.substr(start, i_ - start);
    return v;
  }

  const std::string& path_;
  std::string s_;
  size_t i_ = 0, line_start_ = 0;
  int line_ = 1;
};

// One flag set from the file, and where: the line a conflict names.
struct Assignment {
  std::string flag, text;
  const Entry* at = nullptr;
  std::string shown;  // "key = value" as written
};

class Reader {
 public:
  Reader(const std::string& path, std::vector<Entry> entries)
      : path_(path), entries_(std::move(entries)) {}

  [[noreturn]] void fail(const Entry& e, const std::string& message) const {
    throw InputError({path_, e.line, e.value_col}, e.field(), message);
  }
  const Entry* get(const std::string& table, const std::string& key) const {
    for (const Entry& e : entries_) {
      if (e.table == table && e.key == key) return &e;
    }
    return nullptr;
  }
  std::string where(const Entry& e) const { return path_ + ":" + std::to_string(e.line); }
  static std::string shown(const Entry& e) { return e.key + " = " + e.value.source; }

  // The value of e as the text its flag takes, after checking its type.
  std::string flag_text(const Entry& e, Type type) const {
    using K = Value::Kind;
    const K kind = e.value.kind;
    const bool ok = type == Type::integer   ? kind == K::integer
                    : type == Type::number  ? kind == K::integer || kind == K::number
                    : type == Type::boolean ? kind == K::boolean
                                            : kind == K::string;
    if (!ok) {
      const char* want = type == Type::integer   ? "an integer"
                         : type == Type::number  ? "a number"
                         : type == Type::boolean ? "true or false"
                                                 : "a string";
      fail(e, std::string("expected ") + want + ", got " + e.value.source);
    }
    return e.value.text;
  }
  // Counts of ranks and nodes: bounded so products of two of them stay in int64.
  int64_t count(const Entry* e) const {
    if (!e) return 0;
    flag_text(*e, Type::integer);
    const long long v = std::stoll(e->value.text);
    if (v < 1 || v > INT32_MAX)
      fail(*e, "expected a positive integer below 2^31, got " + e->value.text);
    return v;
  }

  std::string schedule_text(const std::string& table) const {
    const Entry* name = get(table, "ns_schedule");
    const Entry* coeffs = get(table, "newton_schulz_coefficients");
    std::vector<NsCoefficients> steps;
    std::string list;
    if (coeffs) {
      const Value& v = coeffs->value;
      if (v.kind != Value::Kind::array || v.items.empty())
        fail(*coeffs, "expected [[a, b, c], ...], got " + v.source);
      for (const Value& step : v.items) {
        bool ok = step.kind == Value::Kind::array && step.items.size() == 3;
        for (const Value& x : step.items) {
          ok = ok && (x.kind == Value::Kind::integer || x.kind == Value::Kind::number);
        }
        if (!ok) fail(*coeffs, "expected [a, b, c] numbers, got " + step.source);
        list += (list.empty() ? "" : ";") + step.items[0].text + "," + step.items[1].text + "," +
                step.items[2].text;
        steps.push_back({std::stod(step.items[0].text), std::stod(step.items[1].text),
                         std::stod(step.items[2].text)});
      }
    }
    if (!name) return list;
    const std::string n = flag_text(*name, Type::string);
    std::vector<std::string> presets = ns_schedule_presets();
    if (n == "custom") {
      if (!coeffs) fail(*name, "\"custom\" needs newton_schulz_coefficients");
      return list;
    }
    if (std::find(presets.begin(), presets.end(), n) == presets.end())
      fail(*name, "expected " + join(presets, ", ") + " or custom, got '" + n + "'");
    // Both given: the name also brings a norm scale and an update RMS, so the coefficients
    // must be the preset's; different ones are planned under the name "custom".
    const std::vector<NsCoefficients> preset = ns_schedule(n).steps;
    bool same = !coeffs || steps.size() == preset.size();
    for (size_t i = 0; same && coeffs && i < steps.size(); ++i) {
      same = preset[i].a == steps[i].a && preset[i].b == steps[i].b && preset[i].c == steps[i].c;
    }
    if (!same) {
      fail(*coeffs, "not the '" + n + "' schedule's; write ns_schedule = \"custom\" to plan with " +
                        "these coefficients");
    }
    return n;
  }

  // Keys derived from others: they must agree with the file's values.
  void check_derived() const {
    const Entry* world = get("deployment", "world_size");
    const int64_t nodes = count(get("deployment", "num_nodes"));
    const int64_t gpn = count(get("deployment", "gpus_per_node"));
    int64_t w = count(world);
    if (w && nodes && gpn && w != nodes * gpn) {
      fail(*world, "expected num_nodes x gpus_per_node = " + std::to_string(nodes * gpn) +
                       ", got " + std::to_string(w));
    }
    if (!w) w = nodes * gpn;
    const Entry* shard = get("model", "dp_shard");
    const Entry* replicate = get("model", "dp_replicate");
    const int64_t group = count(shard) * std::max<int64_t>(1, count(get("model", "cp")));
    count(get("model", "ep"));
    if (group > INT32_MAX) fail(*shard, "dp_shard x cp is out of range");
    if (w && group && w % group != 0) {
      fail(*shard, "dp_shard x cp = " + std::to_string(group) + " does not divide world_size " +
                       std::to_string(w));
    }
    if (w && group && replicate && count(replicate) != w / group) {
      fail(*replicate, "expected world_size / (dp_shard x cp) = " + std::to_string(w / group) +
                           ", got " + replicate->value.text);
    }
    if (const Entry* offload = get("model", "offload")) {
      const std::string mode = flag_text(*offload, Type::string);
      for (auto [key, implies] :
           {std::pair{"fsdp_cpu_offload", "full"}, {"optim_cpu_offload", "optimizer"}}) {
        const Entry* e = get("model", key);
        if (e && (flag_text(*e, Type::boolean) == "true") != (mode == implies)) {
          fail(*e, "expected " + std::string(mode == implies ? "true" : "false") +
                       " for offload = " + offload->value.source);
        }
      }
    }
    if (const Entry* eps = get("optim", "eps")) {
      if (std::stod(flag_text(*eps, Type::number)) != OptimizerHyper{}.adamw_eps)
        fail(*eps, "no flag sets it: muonplan plans with eps = 1e-08");
    }
  }

  // The keys the file may hold for this optimizer: --emit toml writes no others.
  void check_optimizer_keys(const std::string& type) const {
    const std::set<std::string> adamw = {"type", "lr", "weight_decay", "betas1", "betas2", "eps"};
    const std::set<std::string> signsgd = {"type", "lr", "weight_decay"};
    for (const Entry& e : entries_) {
      const bool schedule = e.key == "ns_schedule" || e.key == "newton_schulz_coefficients";
      bool ok = true;
      if (e.table == "optim") {
        ok = type == "adamw"     ? adamw.count(e.key) > 0
             : type == "signsgd" ? signsgd.count(e.key) > 0
                                 : e.key != "eps";
      } else if (e.table == "muonplan" && schedule) {
        ok = type != "muon";
      }
      if (!ok) {
        throw InputError(
            {path_, e.line, e.key_col}, e.field(),
            "not read for type = \"" + type + "\"" + (schedule ? " (it belongs in [optim])" : ""));
      }
    }
  }

  std::vector<Assignment> assignments(const PlanFlags& flags) const {
    std::string type = flags.optimizer;
    if (const Entry* t = get("optim", "type")) {
      type = flag_text(*t, Type::string);
      if (type != "muon" && type != "adamw" && type != "signsgd")
        fail(*t, "expected muon, adamw or signsgd, got '" + type + "'");
    }
    check_optimizer_keys(type);
    check_derived();
    std::vector<Assignment> out;
    std::set<std::string> done;
    for (const Entry& e : entries_) {
      const KeySpec& spec = *find_key(e.table, e.key);
      std::string flag = spec.flag ? spec.flag : "";
      if (type == "adamw" && e.key == "weight_decay") flag = "adamw-weight-decay";
      if (flag.empty() || !done.insert(flag).second) continue;
      Assignment a{flag, "", &e, shown(e)};
      if (flag == "layout") {
        a = layout_assignment();
      } else if (flag == "adamw-betas") {
        a = betas_assignment(flags);
      } else if (flag == "ns-schedule") {
        a.text = schedule_text(e.table);
        if (const Entry* name = get(e.table, "ns_schedule")) a = {flag, a.text, name, shown(*name)};
      } else {
        a.text = flag_text(e, spec.type);
      }
      out.push_back(a);
    }
    return out;
  }

  // [model] dp_shard, cp, ep: one --layout, fsdp = dp_shard x cp (the FSDP group holds CP).
  Assignment layout_assignment() const {
    const Entry* shard = get("model", "dp_shard");
    const Entry* cp = get("model", "cp");
    const Entry* ep = get("model", "ep");
    Assignment a{"layout", "", nullptr, ""};
    std::vector<std::string> parts, shown_parts;
    if (shard)
      parts.push_back("fsdp=" + std::to_string(count(shard) * std::max<int64_t>(1, count(cp))));
    if (cp) parts.push_back("cp=" + std::to_string(count(cp)));
    if (ep) parts.push_back("ep=" + std::to_string(count(ep)));
    for (const Entry* e : {shard, cp, ep}) {
      if (!e) continue;
      if (!a.at) a.at = e;
      shown_parts.push_back(shown(*e));
    }
    a.text = join(parts, ",");
    a.shown = join(shown_parts, ", ");
    return a;
  }

  // betas1, betas2: one --adamw-betas; a beta the file leaves out keeps the flags' value.
  Assignment betas_assignment(const PlanFlags& flags) const {
    const std::string now = plan_flag_value(flags, "adamw-betas");
    std::string b[2] = {now.substr(0, now.find(',')), now.substr(now.find(',') + 1)};
    Assignment a{"adamw-betas", "", nullptr, ""};
    std::vector<std::string> shown_parts;
    for (int i = 0; i < 2; ++i) {
      if (const Entry* e = get("optim", i == 0 ? "betas1" : "betas2")) {
        b[i] = flag_text(*e, Type::number);
        if (!a.at) a.at = e;
        shown_parts.push_back(shown(*e));
      }
    }
    a.text = b[0] + "," + b[1];
    a.shown = join(shown_parts, ", ");
    return a;
  }

  void apply(PlanFlags& flags) const {
    const std::vector<Assignment> list = assignments(flags);
    const PlanFlags defaults;
    for (const Assignment& a : list) {
      if (a.at->table == "workload" && !flags.workload.empty()) {
        throw InputError({}, "--workload", "conflicts with " + where(*a.at) + " ([workload])");
      }
      PlanFlags probe = flags;
      try {
        set_plan_flag(probe, a.flag, a.text);
      } catch (const InputError& e) {
        fail(*a.at, e.message());
      }
      const std::string given = plan_flag_value(flags, a.flag);
      if (given == plan_flag_value(defaults, a.flag)) {
        flags = probe;
      } else if (given != plan_flag_value(probe, a.flag)) {
        throw InputError({}, "--" + a.flag,
                         "conflicts with " + where(*a.at) + " (" + a.shown + ")");
      }
    }
    // A value set_plan_flag takes but the request refuses ("--offload: ...") is reported at
    // the line it came from.
    PlanFlags check = flags;
    check.trainer_config.clear();
    try {
      to_plan_request(check);
    } catch (const InputError& e) {
      for (const Assignment& a : list) {
        if (e.loc().file.empty() && e.field() == "--" + a.flag) fail(*a.at, e.message());
      }
      throw;
    }
  }

 private:
  const std::string& path_;
  std::vector<Entry> entries_;
};

}  // namespace

void apply_trainer_config(const std::string& path, PlanFlags& flags) {
  Reader(path, Parser(path, read_input_file(path)).parse()).apply(flags);
}

}  // namespace muonplan
