// toml++ into TomlNode. toml++ keeps a table's keys sorted; the tree keeps them in the order
// they are written, so warnings come out in the file's order.
#include "prime_rl/toml_tree.h"

#include <toml++/toml.h>
#include <algorithm>
#include <cstdio>
#include <tuple>

#include "muonplan/base/error.h"
#include "muonplan/planfile/plan_checks.h"

namespace muonplan {
namespace {

void set_position(TomlNode& out, const toml::source_region& r) {
  out.line = static_cast<int>(r.begin.line);
  out.col = static_cast<int>(r.begin.column);
  out.end_line = static_cast<int>(r.end.line);
  out.end_col = static_cast<int>(r.end.column);
}

TomlNode convert(const toml::node& n);

TomlNode convert_table(const toml::table& t) {
  TomlNode out;
  out.kind = TomlNode::Kind::table;
  set_position(out, t.source());
  for (auto&& [k, v] : t) {
    TomlNode child = convert(v);
    child.key_line = static_cast<int>(k.source().begin.line);
    child.key_col = static_cast<int>(k.source().begin.column);
    if (child.key_line == 0) {  // a table made implicitly by [a.b]: its first member's place
      child.key_line = child.line;
      child.key_col = child.col;
    }
    out.members.emplace_back(std::string(k.str()), std::move(child));
  }
  // By where each key is written; the name breaks a tie as toml++'s own order (by name) would.
  std::sort(out.members.begin(), out.members.end(), [](const auto& a, const auto& b) {
    return std::tie(a.second.key_line, a.second.key_col, a.first) <
           std::tie(b.second.key_line, b.second.key_col, b.first);
  });
  return out;
}

TomlNode convert(const toml::node& n) {
  if (const toml::table* t = n.as_table()) return convert_table(*t);
  TomlNode out;
  set_position(out, n.source());
  if (const toml::array* a = n.as_array()) {
    out.kind = TomlNode::Kind::array;
    for (const toml::node& item : *a) out.items.push_back(convert(item));
  } else if (const auto* s = n.as_string()) {
    out.kind = TomlNode::Kind::string;
    out.str = s->get();
  } else if (const auto* i = n.as_integer()) {
    out.kind = TomlNode::Kind::integer;
    out.integer = i->get();
  } else if (const auto* f = n.as_floating_point()) {
    out.kind = TomlNode::Kind::floating;
    out.floating = f->get();
  } else if (const auto* b = n.as_boolean()) {
    out.kind = TomlNode::Kind::boolean;
    out.boolean = b->get();
  } else {
    out.kind = TomlNode::Kind::other;  // dates and times: no planning key takes one
  }
  return out;
}

}  // namespace

const TomlNode* TomlNode::get(const std::string& key) const {
  for (const auto& [k, v] : members) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::string TomlNode::shown() const {
  char buf[40];
  switch (kind) {
    case Kind::string:  // bounded and escaped: it is echoed in messages (plan_checks.h)
      return "\"" + printable(str.size() > 60 ? str.substr(0, 57) + "..." : str) + "\"";
    case Kind::integer:
      return std::to_string(integer);
    case Kind::floating:
      std::snprintf(buf, sizeof buf, "%.17g", floating);
      return buf;
    case Kind::boolean:
      return boolean ? "true" : "false";
    case Kind::array:
      return "an array";
    case Kind::table:
      return "a table";
    default:
      return "a date or time";
  }
}

std::string key_at(const std::string& path, const TomlNode& n) {
  return path + ":" + std::to_string(n.key_line) + ":" + std::to_string(n.key_col) + ": ";
}
std::string value_at(const std::string& path, const TomlNode& n) {
  return path + ":" + std::to_string(n.line) + ":" + std::to_string(n.col) + ": ";
}

TomlNode parse_toml(const std::string& text, const std::string& path) {
  check_toml_bounds(text, path);  // before toml++ recurses or allocates
  try {
    TomlNode root = convert_table(toml::parse(text, path));
    root.line = root.col = 1;
    return root;
  } catch (const toml::parse_error& e) {
    throw InputError(
        {path, static_cast<int>(e.source().begin.line), static_cast<int>(e.source().begin.column)},
        "toml", std::string(e.description()));
  }
}

}  // namespace muonplan
