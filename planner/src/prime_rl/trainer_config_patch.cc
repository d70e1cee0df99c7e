// `--emit prime-rl` over a user's file: the keys whose value the plan changes, laid over the
// file's TEXT at the positions toml++ reports for each node (toml_tree.h), so every byte the
// plan does not change stays as written: comments, key order, blank lines, a UTF-8 BOM.
// A changed key is written where the file writes it (an older name, [trainer.model] name,
// top-level rl_slurm keys, every row-length key); `--emit prime-rl-diff` prints only those keys.
// A key changes when the fragment of the chosen plan and the fragment of the file's own plan
// differ there, so a key the file leaves at prime-rl's default stays unwritten.
#include <algorithm>
#include <map>
#include <sstream>

#include "muonplan/base/error.h"
#include "prime_rl/toml_tree.h"
#include "prime_rl/trainer_config.h"

namespace muonplan {
namespace {

// One `key = value` line of a fragment, by its full dotted path ("trainer.model.cp", or
// "#muonplan.bf16_momentum" for a `# muonplan:` comment).
struct Line {
  std::string table, key, value, text;
};

// The end of a value starting at `from` on `s`: strings, arrays and inline tables matched.
size_t value_end(const std::string& s, size_t from) {
  int depth = 0;
  char quote = 0;
  for (size_t i = from; i < s.size(); ++i) {
    const char c = s[i];
    if (quote) {
      if (c == '\\' && quote == '"')
        ++i;
      else if (c == quote)
        quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (depth == 0 && (c == '#' || c == ' ' || c == '\t' || c == ',')) {
      return i;
    }
  }
  return s.size();
}

std::vector<Line> fragment_lines(const std::string& fragment) {
  std::vector<Line> out;
  std::istringstream in(fragment);
  std::string line, table;
  const std::string ours = "# muonplan: ";
  while (std::getline(in, line)) {
    if (line.size() > 2 && line.front() == '[') {
      table = line.substr(1, line.find(']') - 1);
      continue;
    }
    const bool comment = line.rfind(ours, 0) == 0;
    if (line.empty() || (line[0] == '#' && !comment)) continue;
    const std::string body = comment ? line.substr(ours.size()) : line;
    const size_t eq = body.find(" = ");
    const size_t end = value_end(body, eq + 3);
    out.push_back({comment ? "#muonplan" : table, body.substr(0, eq),
                   body.substr(eq + 3, end - eq - 3), line});
  }
  return out;
}

std::string path_of(const Line& l) {
  return l.table.empty() ? l.key : l.table + "." + l.key;
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> out;
  std::istringstream in(path);
  for (std::string part; std::getline(in, part, '.');) out.push_back(part);
  return out;
}

const TomlNode* find_path(const TomlNode& root, const std::string& path) {
  const TomlNode* n = &root;
  for (const std::string& part : split_path(path)) {
    n = n && n->kind == TomlNode::Kind::table ? n->get(part) : nullptr;
  }
  return n;
}

// Where else a file of an older schema, or one naming the model in [trainer.model], writes it.
// The row length is written at every place the file has (the planner reads the orchestrator's,
// prime-rl checks it against the trainer's): `all` is true there.
std::vector<std::string> places(const std::string& path, bool& all) {
  static const std::map<std::string, std::vector<std::string>> older = {
      {"model.name", {"trainer.model.name"}},
      {"seq_len", {"orchestrator.seq_len", "trainer.model.seq_len"}},
      {"data.seq_len", {"seq_len"}},
      {"trainer.model.fused_lm_head_token_chunk_size", {"trainer.model.fused_lm_head_chunk_size"}},
      {"model.fused_lm_head_token_chunk_size", {"model.fused_lm_head_chunk_size"}},
      {"deployment.num_train_nodes",
       {"deployment.num_nodes", "slurm.num_train_nodes", "num_train_nodes", "num_training_nodes",
        "num_nodes"}},
      {"deployment.num_train_gpus", {"deployment.num_gpus"}},
      {"deployment.gpus_per_node", {"slurm.gpus_per_node", "gpus_per_node"}},
      {"deployment.nodes_per_fsdp_group", {"slurm.nodes_per_fsdp_group", "nodes_per_fsdp_group"}},
      {"trainer.max_concurrent_runs", {"max_concurrent_runs"}},
      // PyTorch reads PYTORCH_ALLOC_CONF before the CUDA name: a file's trainer one is replaced.
      {"trainer.env_vars.PYTORCH_CUDA_ALLOC_CONF", {"trainer.env_vars.PYTORCH_ALLOC_CONF"}}};
  all = path == "seq_len";
  std::vector<std::string> out = {path};
  if (const auto it = older.find(path); it != older.end())
    out.insert(out.end(), it->second.begin(), it->second.end());
  return out;
}

// The dotted path of a `[a.b]` header line ("" when the line is none; `[[a]]` is "[[a]]", a
// header too for where a section ends).
std::string header_path(const std::string& text, size_t from, size_t to) {
  size_t a = from;
  while (a < to && (text[a] == ' ' || text[a] == '\t')) ++a;
  if (a >= to || text[a] != '[') return "";
  if (a + 1 < to && text[a + 1] == '[') return "[[";
  std::string h;
  for (size_t i = a + 1; i < to && text[i] != ']'; ++i) {
    if (text[i] != ' ' && text[i] != '\t' && text[i] != '"' && text[i] != '\'') h += text[i];
  }
  return h;
}

// The source text with toml++'s positions as byte offsets, and edits applied at the end.
class TextPatch {
 public:
  explicit TextPatch(const std::string& text) : text_(text) {
    bom_ = text.compare(0, 3, "\xef\xbb\xbf") == 0 ? 3 : 0;
    starts_.push_back(0);
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\n') starts_.push_back(i + 1);
    }
  }
  // Columns count code points (UTF-8 continuation bytes are skipped); line 1 starts after a BOM.
  size_t at(int line, int col) const {
    if (line < 1 || static_cast<size_t>(line) > starts_.size()) return text_.size();
    size_t i = starts_[line - 1] + (line == 1 ? bom_ : 0);
    for (int c = 1; c < col && i < text_.size(); ++c) {
      ++i;
      while (i < text_.size() && (static_cast<unsigned char>(text_[i]) & 0xC0) == 0x80) ++i;
    }
    return i;
  }
  size_t begin_of(const TomlNode& n) const { return at(n.line, n.col); }
  size_t end_of(const TomlNode& n) const { return at(n.end_line, n.end_col); }
  size_t line_start(size_t off) const {
    const size_t nl = off == 0 ? std::string::npos : text_.rfind('\n', off - 1);
    return nl == std::string::npos ? std::min(off, bom_) : nl + 1;
  }
  size_t line_end(size_t off) const {  // after the line's '\n' (or the text's end)
    const size_t nl = text_.find('\n', off);
    return nl == std::string::npos ? text_.size() : nl + 1;
  }
  size_t bom() const { return bom_; }
  const std::string& text() const { return text_; }
  // Offsets of each line: [start, end) without the '\n'.
  std::vector<std::pair<size_t, size_t>> lines() const {
    std::vector<std::pair<size_t, size_t>> out;
    for (size_t i = 0; i < starts_.size(); ++i) {
      const size_t s = starts_[i] + (i == 0 ? bom_ : 0);
      const size_t e = i + 1 < starts_.size() ? starts_[i + 1] - 1 : text_.size();
      if (s < e || i + 1 < starts_.size()) out.push_back({s, e});
    }
    return out;
  }
  void replace(size_t from, size_t to, std::string with) {
    edits_.push_back({from, to, std::move(with), edits_.size()});
  }
  void insert(size_t at, std::string with) { replace(at, at, std::move(with)); }
  // False when two edits overlap (the file writes one thing twice): no output then.
  bool apply(std::string& out) const {
    std::vector<Edit> e = edits_;
    // From the end back, so earlier offsets hold; at one offset a removal first, then the
    // insertions, the first made ending up first.
    std::sort(e.begin(), e.end(), [](const Edit& a, const Edit& b) {
      if (a.from != b.from) return a.from > b.from;
      return a.to != b.to ? a.to > b.to : a.seq > b.seq;
    });
    out = text_;
    size_t limit = text_.size();
    for (const Edit& x : e) {
      if (x.to > limit) return false;
      out.replace(x.from, x.to - x.from, x.with);
      limit = x.from;
    }
    return true;
  }

 private:
  struct Edit {
    size_t from, to;
    std::string with;
    size_t seq;
  };
  std::string text_;
  size_t bom_ = 0;
  std::vector<size_t> starts_;
  std::vector<Edit> edits_;
};

class Patch {
 public:
  Patch(const std::string& text, const TomlNode& root) : t_(text), root_(root) {
    if (find_path(root, "slurm.num_train_nodes")) launcher_table_ = "slurm";
    if (find_path(root, "num_train_nodes") || find_path(root, "num_training_nodes"))
      launcher_table_ = "";
  }
  // False when the change cannot be laid over the file (a table written inline or by dotted
  // keys that would need a new key inside it).
  bool set(const Line& l) {
    if (l.table == "#muonplan") return set_comment(l);
    if (l.table == "deployment" && find_path(root_, "trainer_gpu_ids")) return set_gpu_ids(l);
    bool all = false, done = false;
    for (const std::string& p : places(path_of(l), all)) {
      const TomlNode* n = find_path(root_, p);
      if (!n || n->line < 1) continue;
      if (!replace(p, *n, l.value)) return false;
      done = true;
      if (!all) return true;
    }
    if (done) return true;
    // A launcher-era file's world keys go where it keeps the others (top level, [slurm]).
    if (l.table == "deployment" && launcher_table_ != "deployment")
      return insert(launcher_table_, l.key, l.value);
    // A dotted key (`lora.rank`) goes into its own table ([trainer.model.lora]), which a
    // [header] may already define.
    const std::string full = path_of(l);
    const size_t dot = full.rfind('.');
    return dot == std::string::npos ? insert("", full, l.value)
                                    : insert(full.substr(0, dot), full.substr(dot + 1), l.value);
  }
  // A key the other deployment type has no field for, commented out with the reason.
  void drop(const std::string& path, const std::string& why) {
    const TomlNode* n = find_path(root_, path);
    if (!n || n->key_line < 1) return;
    const size_t start = t_.line_start(t_.at(n->key_line, n->key_col));
    t_.insert(start, "# ");
    size_t end = t_.line_end(t_.end_of(*n));
    if (end > 0 && t_.text()[end - 1] == '\n') --end;
    if (end > 0 && t_.text()[end - 1] == '\r') --end;
    t_.insert(end, "  # " + why);
  }
  bool str(std::string& out) const {
    if (!t_.apply(out)) return false;
    for (const auto& [table, body] : new_tables_) {
      if (!out.empty() && out.back() != '\n') out += "\n";
      out += "\n[" + table + "]\n" + body;
    }
    for (const std::string& l : tail_) {
      if (!out.empty() && out.back() != '\n') out += "\n";
      out += l + "\n";
    }
    return true;
  }

 private:
  // Whether `n`, reached by `path`, is a table its own `[path]` header defines.
  bool has_header(const std::string& path, const TomlNode& n) const {
    if (n.kind != TomlNode::Kind::table || n.line < 1) return false;
    const size_t b = t_.begin_of(n);
    return header_path(t_.text(), b, t_.line_end(b)) == path;
  }
  // A [path] section: from its header line to the last line with a key before the next header
  // (with `subtables`, the next that is not one of its own sub-tables).
  std::pair<size_t, size_t> section(const std::string& path, const TomlNode& n,
                                    bool subtables) const {
    const size_t from = t_.line_start(t_.begin_of(n));
    size_t to = t_.line_end(t_.begin_of(n));
    for (const auto& [s, e] : t_.lines()) {
      if (s < to) continue;
      const std::string h = header_path(t_.text(), s, e);
      if (!h.empty() && (!subtables || h.rfind(path + ".", 0) != 0)) break;
      const size_t a = t_.text().find_first_not_of(" \t\r", s);
      if (a < e && t_.text()[a] != '#') to = t_.line_end(s);
    }
    return {from, to};
  }
  // The value's text replaced; a section written as a [table] header (`[trainer.model.ac]`)
  // is removed and the key written in its parent table instead.
  bool replace(const std::string& path, const TomlNode& n, const std::string& value) {
    if (n.kind == TomlNode::Kind::table && has_header(path, n)) {
      const auto [from, to] = section(path, n, true);
      t_.replace(from, to, "");
      const size_t dot = path.rfind('.');
      return insert(dot == std::string::npos ? "" : path.substr(0, dot),
                    path.substr(dot == std::string::npos ? 0 : dot + 1), value);
    }
    if (n.kind == TomlNode::Kind::table && t_.text()[t_.begin_of(n)] != '{') return false;
    t_.replace(t_.begin_of(n), t_.end_of(n), value);
    return true;
  }
  // A new key: after the last key line of its table's own [header] section; a top-level key
  // after the last top-level key (else before the first header); a table with no header of its
  // own (absent, or made implicitly by a sub-table's header) as a new [table] at the end.
  bool insert(const std::string& table, const std::string& key, const std::string& value) {
    const std::string text = key + " = " + value + "\n";
    if (table.empty()) {
      size_t at = std::string::npos, last = std::string::npos;
      for (const auto& [s, e] : t_.lines()) {
        if (!header_path(t_.text(), s, e).empty()) {
          if (at == std::string::npos) at = s;
          break;
        }
        const size_t a = t_.text().find_first_not_of(" \t\r", s);
        if (a < e && t_.text()[a] != '#') last = t_.line_end(s);
      }
      at = last != std::string::npos ? last : at != std::string::npos ? at : t_.text().size();
      const bool newline = at > 0 && t_.text()[at - 1] != '\n' && at > t_.bom();
      t_.insert(at, (newline ? "\n" : "") + text);
      return true;
    }
    const TomlNode* n = find_path(root_, table);
    if (n && n->kind != TomlNode::Kind::table) return false;
    if (n && has_header(table, *n)) {
      const size_t at = section(table, *n, false).second;
      const bool newline = at > 0 && t_.text()[at - 1] != '\n';
      t_.insert(at, (newline ? "\n" : "") + text);
      return true;
    }
    // Inline or dotted-key tables cannot take a [header] of their own.
    if (n && n->line > 0 && t_.text()[t_.begin_of(*n)] != '[') return false;
    for (auto& [name, body] : new_tables_) {
      if (name == table) {
        body += text;
        return true;
      }
    }
    new_tables_.push_back({table, text});
    return true;
  }
  // The local launcher's file (trainer_gpu_ids, one node): the trainer's GPUs as the first ids
  // that inference_gpu_ids leaves; it has no key for more nodes.
  bool set_gpu_ids(const Line& l) {
    if (l.key != "num_train_gpus" && l.key != "nodes_per_fsdp_group")
      throw InputError({}, "--emit",
                       "the file's world is the local launcher's trainer_gpu_ids, one node; "
                       "prime-rl of its date has no key for more nodes there (rl_slurm's "
                       "num_train_nodes): re-plan with --nodes 1");
    if (l.key != "num_train_gpus") return true;
    std::vector<int64_t> taken;
    if (const TomlNode* inf = find_path(root_, "inference_gpu_ids"))
      for (const TomlNode& i : inf->items) taken.push_back(i.integer);
    std::string ids;
    const int64_t want = std::stoll(l.value);
    for (int64_t id = 0, n = 0; n < want; ++id) {
      if (std::find(taken.begin(), taken.end(), id) != taken.end()) continue;
      ids += (n++ ? ", " : "") + std::to_string(id);
    }
    return replace("trainer_gpu_ids", *find_path(root_, "trainer_gpu_ids"), "[" + ids + "]");
  }
  bool set_comment(const Line& l) {
    for (const auto& [s, e] : t_.lines()) {
      const std::string line = t_.text().substr(s, e - s);
      const size_t at = line.find("muonplan:");
      if (line.rfind("#", 0) != 0 || at == std::string::npos) continue;
      const size_t k = line.find_first_not_of(" ", at + 9);
      if (k != std::string::npos && line.compare(k, l.key.size() + 1, l.key + " ") == 0) {
        t_.replace(s, e, l.text);
        return true;
      }
    }
    tail_.push_back(l.text);
    return true;
  }
  TextPatch t_;
  const TomlNode& root_;
  std::string launcher_table_ = "deployment";  // where the file keeps its world
  std::vector<std::pair<std::string, std::string>> new_tables_;
  std::vector<std::string> tail_;
};

bool forced(const std::vector<std::string>& force, const std::string& path) {
  return std::find(force.begin(), force.end(), path) != force.end();
}

}  // namespace

bool is_header_comment(const std::string& line) {
  return line.rfind("# ", 0) == 0 && line.rfind("# muonplan: ", 0) != 0;
}

std::vector<std::string> changed_lines(const std::string& chosen, const std::string& written,
                                       const std::vector<std::string>& force) {
  std::map<std::string, std::string> was;
  for (const Line& l : fragment_lines(written)) was[path_of(l)] = l.value;
  std::vector<std::string> out;
  for (const Line& l : fragment_lines(chosen)) {
    const auto it = was.find(path_of(l));
    if (it == was.end() || it->second != l.value || forced(force, path_of(l)))
      out.push_back(path_of(l));
  }
  return out;
}

std::string diff_fragment(const std::string& chosen, const std::string& written,
                          const std::vector<std::string>& force) {
  const std::vector<std::string> changed = changed_lines(chosen, written, force);
  std::string out, table;  // top-level keys come first and have no header
  std::istringstream in(chosen);
  for (std::string line; std::getline(in, line) && is_header_comment(line);) out += line + "\n";
  if (changed.empty()) out += "# no key changes: the file as written is the plan\n";
  for (const Line& l : fragment_lines(chosen)) {
    if (std::find(changed.begin(), changed.end(), path_of(l)) == changed.end()) continue;
    if (l.table != table && l.table != "#muonplan") out += "\n[" + l.table + "]\n";
    if (l.table != "#muonplan") table = l.table;
    out += l.text + "\n";
  }
  return out;
}

std::string patched_file(const std::string& source, const std::string& path,
                         const std::string& chosen, const std::string& written,
                         const std::vector<std::string>& force) {
  const TomlNode root = parse_toml(source, path);
  Patch p(source, root);
  const std::vector<std::string> changed = changed_lines(chosen, written, force);
  bool whole = true;
  std::string type;
  // A launcher-era file (its world in top-level keys, [slurm] or trainer_gpu_ids) has no
  // [deployment] type: its own keys carry the world.
  const bool launcher =
      find_path(root, "num_train_nodes") || find_path(root, "num_training_nodes") ||
      find_path(root, "slurm.num_train_nodes") || find_path(root, "trainer_gpu_ids");
  for (const Line& l : fragment_lines(chosen)) {
    if (std::find(changed.begin(), changed.end(), path_of(l)) == changed.end()) continue;
    if (path_of(l) == "deployment.type" && launcher) continue;
    if (path_of(l) == "deployment.type") type = l.value;
    whole = p.set(l) && whole;
  }
  if (type == "\"multi_node\"") {
    for (const char* k : {"num_train_gpus", "num_gpus", "num_infer_gpus"})
      p.drop(std::string("deployment.") + k, "muonplan: not a key of multi_node");
  } else if (type == "\"single_node\"") {
    for (const char* k : {"num_train_nodes", "num_nodes", "num_infer_nodes"})
      p.drop(std::string("deployment.") + k, "muonplan: not a key of single_node");
  }
  std::string out;
  try {
    if (whole && p.str(out)) {
      parse_toml(out, path);
      return out;
    }
  } catch (const InputError&) {
  }
  return "# the changes could not be laid over " + path +
         " (a table written inline or by dotted keys); the changed keys:\n" +
         diff_fragment(chosen, written, force);
}

}  // namespace muonplan
