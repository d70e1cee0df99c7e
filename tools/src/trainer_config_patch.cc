// `--emit prime-rl` over a user's file: the keys whose value the plan changes, laid over the
// file as written (every other table, key and comment kept), each where the file writes it
// (an older name, [trainer.model] name, top-level rl_slurm keys); `--emit prime-rl-diff` prints
// only those keys. A key changes when the fragment of the chosen plan and the fragment of the
// file's own plan differ there, so a key the file leaves at prime-rl's default stays unwritten.
#include <algorithm>
#include <map>
#include <sstream>

#include "muonplan/base/error.h"
#include "muonplan/planner/toml_tree.h"
#include "muonplan/tools/trainer_config.h"

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

const TomlNode* find_path(const TomlNode& root, const std::string& path) {
  const TomlNode* n = &root;
  std::istringstream in(path);
  std::string part;
  while (n && std::getline(in, part, '.')) {
    n = n->kind == TomlNode::Kind::table ? n->get(part) : nullptr;
  }
  return n;
}

// Where else a file of an older schema, or one naming the model in [trainer.model], writes it.
std::vector<std::string> places(const std::string& path) {
  static const std::map<std::string, std::vector<std::string>> older = {
      {"model.name", {"trainer.model.name"}},
      {"seq_len", {"orchestrator.seq_len"}},
      {"data.seq_len", {"seq_len"}},
      {"trainer.model.fused_lm_head_token_chunk_size", {"trainer.model.fused_lm_head_chunk_size"}},
      {"model.fused_lm_head_token_chunk_size", {"model.fused_lm_head_chunk_size"}},
      {"deployment.num_train_nodes",
       {"deployment.num_nodes", "slurm.num_train_nodes", "num_train_nodes", "num_training_nodes",
        "num_nodes"}},
      {"deployment.num_train_gpus", {"deployment.num_gpus"}},
      {"deployment.gpus_per_node", {"slurm.gpus_per_node", "gpus_per_node"}}};
  std::vector<std::string> out = {path};
  if (const auto it = older.find(path); it != older.end())
    out.insert(out.end(), it->second.begin(), it->second.end());
  return out;
}

class Patch {
 public:
  Patch(const std::string& text, const TomlNode& root) : root_(root) {
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) lines_.push_back(l);
  }
  // False when the value cannot be replaced in place (a [table] header section).
  bool set(const Line& l) {
    if (l.table == "#muonplan") return set_comment(l);
    for (const std::string& p : places(path_of(l))) {
      const TomlNode* n = find_path(root_, p);
      if (!n || n->line < 1) continue;
      std::string& s = lines_[n->line - 1];
      const size_t from = static_cast<size_t>(n->col - 1);
      if (n->kind == TomlNode::Kind::table && (from >= s.size() || s[from] != '{')) return false;
      s = s.substr(0, from) + l.value + s.substr(value_end(s, from));
      return true;
    }
    insert(l);
    return true;
  }
  // A key the other deployment type has no field for, commented out.
  void drop(const std::string& path, const std::string& why) {
    const TomlNode* n = find_path(root_, path);
    if (n && n->key_line > 0)
      lines_[n->key_line - 1] = "# " + lines_[n->key_line - 1] + "  # " + why;
  }
  std::string str() const {
    std::string out;
    for (const std::string& l : lines_) out += l + "\n";
    for (const std::string& l : tail_) out += l + "\n";
    return out;
  }

 private:
  bool set_comment(const Line& l) {
    for (std::string& s : lines_) {
      const size_t at = s.find("muonplan:");
      if (s.rfind("#", 0) == 0 && at != std::string::npos &&
          s.compare(s.find_first_not_of(" ", at + 9), l.key.size() + 1, l.key + " ") == 0) {
        s = l.text;
        return true;
      }
    }
    tail_.push_back(l.text);
    return true;
  }
  // After the last key of the longest [header] that holds the path; a top-level key before
  // the first header; else a new [table] at the end.
  void insert(const Line& l) {
    const std::string path = path_of(l);
    size_t best = 0, at = lines_.size();
    for (size_t i = 0; i < lines_.size(); ++i) {
      const std::string h = header(lines_[i]);
      if (h.empty()) continue;
      if (at == lines_.size() && l.table.empty()) at = i;
      if (path.rfind(h + ".", 0) == 0 && h.size() > best) {
        best = h.size();
        size_t j = i + 1;
        while (j < lines_.size() && header(lines_[j]).empty()) ++j;
        while (j > i + 1 && lines_[j - 1].find_first_not_of(" \t") == std::string::npos) --j;
        at = j;
      }
    }
    if (best > 0) {
      lines_.insert(lines_.begin() + at, path.substr(best + 1) + " = " + l.value);
    } else if (l.table.empty()) {
      lines_.insert(lines_.begin() + at, l.key + " = " + l.value);
    } else {
      lines_.push_back("");
      lines_.push_back("[" + l.table + "]");
      lines_.push_back(l.key + " = " + l.value);
    }
  }
  static std::string header(const std::string& line) {
    const size_t a = line.find_first_not_of(" \t");
    if (a == std::string::npos || line[a] != '[' || line.compare(a, 2, "[[") == 0) return "";
    std::string h;
    for (size_t i = a + 1; i < line.size() && line[i] != ']'; ++i) {
      if (line[i] != ' ' && line[i] != '\t') h += line[i];
    }
    return h;
  }
  const TomlNode& root_;
  std::vector<std::string> lines_, tail_;
};

}  // namespace

std::vector<std::string> changed_lines(const std::string& chosen, const std::string& written) {
  std::map<std::string, std::string> was;
  for (const Line& l : fragment_lines(written)) was[path_of(l)] = l.value;
  std::vector<std::string> out;
  for (const Line& l : fragment_lines(chosen)) {
    const auto it = was.find(path_of(l));
    if (it == was.end() || it->second != l.value) out.push_back(path_of(l));
  }
  return out;
}

std::string diff_fragment(const std::string& chosen, const std::string& written) {
  const std::vector<std::string> changed = changed_lines(chosen, written);
  std::string out, table = "\x01";
  std::istringstream in(chosen);
  for (std::string line; std::getline(in, line) && line.rfind("# ", 0) == 0;) out += line + "\n";
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
                         const std::string& chosen, const std::string& written) {
  const TomlNode root = parse_toml(source, path);
  Patch p(source, root);
  const std::vector<std::string> changed = changed_lines(chosen, written);
  bool whole = true;
  std::string type;
  for (const Line& l : fragment_lines(chosen)) {
    if (std::find(changed.begin(), changed.end(), path_of(l)) == changed.end()) continue;
    // A launcher-era file (its world in top-level keys or [slurm]) has no [deployment] type.
    const bool launcher =
        find_path(root, "num_train_nodes") || find_path(root, "slurm.num_train_nodes");
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
  const std::string out = p.str();
  try {
    if (whole) {
      parse_toml(out, path);
      return out;
    }
  } catch (const InputError&) {
  }
  return "# the changes could not be laid over " + path + " (a key written as a [table]); " +
         "the changed keys:\n" + diff_fragment(chosen, written);
}

}  // namespace muonplan
