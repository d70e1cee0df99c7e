#include <yaml-cpp/depthguard.h>

#include "muonplan/planner/yaml_reader.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <utility>

#include "muonplan/base/parse_int.h"
#include "muonplan/planfile/plan_checks.h"

namespace muonplan::detail {

namespace {

// What a node holds, for "expected X, got Y" messages.
std::string describe(const YAML::Node& node) {
  // Escaped and bounded: the value is the user's text, echoed in a message.
  if (node.IsScalar()) {
    const std::string& s = node.Scalar();
    return "'" + printable(s.size() > 60 ? s.substr(0, 57) + "..." : s) + "'";
  }
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "nothing";
}

// yaml-cpp keeps both entries of a key given twice and looks up the first: refuse it, in every
// mapping of the document. Each mapping and list is visited once (by its position in the
// text), so aliases cannot make the walk exponential.
void refuse_duplicate_keys(const YAML::Node& root, const std::string& path) {
  std::vector<std::pair<YAML::Node, std::string>> todo = {{root, ""}};
  std::set<std::pair<int, bool>> seen;  // (position, is a mapping) of containers visited
  while (!todo.empty()) {
    const auto [node, where] = todo.back();
    todo.pop_back();
    if (!node.IsMap() && !node.IsSequence()) continue;
    if (!seen.emplace(node.Mark().pos, node.IsMap()).second) continue;
    if (node.IsSequence()) {
      for (size_t i = 0; i < node.size(); ++i)
        todo.push_back({node[i], where + "[" + std::to_string(i) + "]"});
      continue;
    }
    std::map<std::string, YAML::Mark> keys;
    for (const auto& kv : node) {
      if (!kv.first.IsScalar()) continue;
      const std::string key = kv.first.Scalar();
      const std::string field = where.empty() ? key : where + "." + key;
      const auto [it, fresh] = keys.emplace(key, kv.first.Mark());
      if (!fresh) {
        const YAML::Mark m = kv.first.Mark();
        throw InputError({path, m.line + 1, m.column + 1}, field,
                         "given twice, at lines " + std::to_string(it->second.line + 1) + " and " +
                             std::to_string(m.line + 1));
      }
      todo.push_back({kv.second, field});
    }
  }
}

// Counts the bytes that can separate nodes; refuses the text at the first past the bound.
// Comments and quoted scalars count too: an over-count only makes the bound stricter, and no
// muonplan file comes near it.
void check_yaml_size(const std::string& text, const std::string& path) {
  int64_t separators = 0, line = 1, column = 1;
  for (char ch : text) {
    const bool sep =
        ch == ',' || ch == ':' || ch == '-' || ch == '?' || ch == '[' || ch == '{' || ch == '\n';
    if (sep && ++separators > kMaxYamlSeparators) {
      throw InputError({path, int(line), int(column)}, "yaml",
                       "more than " + std::to_string(kMaxYamlSeparators) +
                           " items (separators , : - ? [ { or lines); no muonplan YAML file "
                           "holds as many");
    }
    if (ch == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
}

}  // namespace

YAML::Node parse_yaml_text(const std::string& text, const std::string& path) {
  check_yaml_size(text, path);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's depth guard (its parser recurses): no muonplan format nests past a few levels.
    throw InputError({path, e.mark.line + 1, e.mark.column + 1}, "yaml",
                     "nested too deeply (depth " + std::to_string(e.depth()) +
                         "); muonplan's formats nest a few levels");
  } catch (const YAML::Exception& e) {
    throw InputError({path, e.mark.line + 1, e.mark.column + 1}, "yaml", e.msg);
  }
  refuse_duplicate_keys(root, path);
  return root;
}

YamlMap::YamlMap(YAML::Node node, std::string path, std::string where)
    : node_(std::move(node)), path_(std::move(path)), where_(std::move(where)) {
  if (!node_.IsMap()) {
    const std::string what = where_.empty() ? "document" : where_;
    if (!node_.IsDefined() || node_.IsNull()) {
      throw InputError(loc_of(node_), what, "is empty; expected a mapping");
    }
    throw InputError(loc_of(node_), what, "expected a mapping of fields, got " + describe(node_));
  }
}

SourceLoc YamlMap::loc_of(const YAML::Node& node) const {
  const YAML::Mark mark = node.Mark();
  if (mark.line < 0) return {path_, 0, 0};
  return {path_, mark.line + 1, mark.column + 1};
}

std::string YamlMap::field(const std::string& key) const {
  return where_.empty() ? key : where_ + "." + key;
}

void YamlMap::fail(const std::string& key, const std::string& message) const {
  const YAML::Node value = node_[key];
  if (!value.IsDefined()) fail_at(node_, key, message);
  if (!value.IsScalar()) {
    // A block mapping or list starts on a later line than its key: point at the key.
    for (const auto& kv : node_) {
      if (kv.first.IsScalar() && kv.first.Scalar() == key) fail_at(kv.first, key, message);
    }
  }
  fail_at(value, key, message);
}

void YamlMap::fail_at(const YAML::Node& node, const std::string& key,
                      const std::string& message) const {
  throw InputError(loc_of(node), field(key), message);
}

bool YamlMap::has(const std::string& key) const {
  return node_[key].IsDefined();
}

YAML::Node YamlMap::raw(const std::string& key) const {
  return node_[key];
}

YAML::Node YamlMap::require(const std::string& key) const {
  YAML::Node value = node_[key];
  if (!value.IsDefined()) throw InputError(loc_of(node_), field(key), "is required but missing");
  if (value.IsNull()) fail_at(value, key, "is empty");
  return value;
}

namespace {

bool parse_double(const std::string& s, double* out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

}  // namespace

int64_t YamlMap::get_int(const std::string& key) const {
  const YAML::Node value = require(key);
  const std::optional<int64_t> v = value.IsScalar() ? parse_int(value.Scalar()) : std::nullopt;
  if (!v) fail_at(value, key, "expected an integer, got " + describe(value));
  return *v;
}

int64_t YamlMap::get_int(const std::string& key, int64_t fallback) const {
  return has(key) ? get_int(key) : fallback;
}

double YamlMap::get_double(const std::string& key) const {
  const YAML::Node value = require(key);
  double v = 0;
  if (!value.IsScalar() || !parse_double(value.Scalar(), &v)) {
    fail_at(value, key, "expected a number, got " + describe(value));
  }
  return v;
}

double YamlMap::get_double(const std::string& key, double fallback) const {
  return has(key) ? get_double(key) : fallback;
}

bool YamlMap::get_bool(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  const YAML::Node value = require(key);
  const std::string s = value.IsScalar() ? value.Scalar() : "";
  if (s == "true") return true;
  if (s == "false") return false;
  fail_at(value, key, "expected true or false, got " + describe(value));
}

std::string YamlMap::get_string(const std::string& key) const {
  const YAML::Node value = require(key);
  if (!value.IsScalar()) fail_at(value, key, "expected a string, got " + describe(value));
  // JSON output (--json, plans, reports) cannot hold other bytes, a path ends at a NUL.
  if (const std::string why = text_problem(value.Scalar()); !why.empty()) fail_at(value, key, why);
  return value.Scalar();
}

std::string YamlMap::get_string(const std::string& key, const std::string& fallback) const {
  return has(key) ? get_string(key) : fallback;
}

std::vector<int64_t> YamlMap::get_int_list(const std::string& key) const {
  std::vector<int64_t> out;
  if (!has(key)) return out;
  const YAML::Node value = node_[key];
  if (value.IsNull()) return out;
  if (!value.IsSequence()) {
    fail_at(value, key, "expected a list of integers, got " + describe(value));
  }
  for (const YAML::Node& item : value) {
    const std::optional<int64_t> v = item.IsScalar() ? parse_int(item.Scalar()) : std::nullopt;
    if (!v) fail_at(item, key, "expected a list of integers, got " + describe(item) + " in it");
    out.push_back(*v);
  }
  return out;
}

std::vector<double> YamlMap::get_double_list(const std::string& key) const {
  std::vector<double> out;
  if (!has(key)) return out;
  const YAML::Node value = node_[key];
  if (!value.IsSequence()) {
    fail_at(value, key, "expected a list of numbers, got " + describe(value));
  }
  for (const YAML::Node& item : value) {
    double v = 0;
    if (!item.IsScalar() || !parse_double(item.Scalar(), &v)) {
      fail_at(item, key, "expected a list of numbers, got " + describe(item) + " in it");
    }
    out.push_back(v);
  }
  return out;
}

YamlMap YamlMap::get_map(const std::string& key) const {
  const YAML::Node value = require(key);
  if (!value.IsMap()) fail_at(value, key, "expected a mapping of fields, got " + describe(value));
  return YamlMap(value, path_, field(key));
}

std::optional<YamlMap> YamlMap::get_optional_map(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return get_map(key);
}

void YamlMap::check_known(const std::set<std::string>& allowed) const {
  for (const auto& kv : node_) {
    const std::string key = kv.first.Scalar();
    if (!allowed.count(key)) {
      throw InputError(loc_of(kv.first), field(key), "unknown field");
    }
  }
}

}  // namespace muonplan::detail
