// A TOML document as a plain tree with source positions: the one place toml++ is used
// (toml_tree.cc compiles it), so the trainer-config reader and its tests do not pay for the
// library's templates in every translation unit.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace muonplan {

struct TomlMember;  // a table's key and value, below

struct TomlNode {
  enum class Kind { table, array, string, integer, floating, boolean, other };
  Kind kind = Kind::table;
  std::string str;  // a string's value
  int64_t integer = 0;
  double floating = 0;
  bool boolean = false;
  // Where the value starts and ends (the end exclusive), as toml++ reports it: lines from 1,
  // columns in code points from 1, line 1's after a UTF-8 BOM. A [table] header's table spans
  // its header; an implicit table (made by [a.b]) spans the header that made it.
  int line = 0, col = 0, end_line = 0, end_col = 0;
  int key_line = 0, key_col = 0;    // where its key is written (0 for array items)
  std::vector<TomlMember> members;  // a table's, by source position
  std::vector<TomlNode> items;      // an array's

  const TomlNode* get(const std::string& key) const;
  bool is_number() const { return kind == Kind::integer || kind == Kind::floating; }
  double number() const { return kind == Kind::integer ? double(integer) : floating; }
  std::string shown() const;  // the value as TOML writes it, for messages
};

// One key of a table. Not a std::pair: a pair of an incomplete TomlNode inside TomlNode itself
// is undefined, and clang 14 (the fuzz build) refuses it; a vector of a declared struct is not.
struct TomlMember {
  TomlMember(std::string key, TomlNode value) : first(std::move(key)), second(std::move(value)) {}
  std::string first;
  TomlNode second;
};

// "PATH:LINE:COL: ", the prefix of a message about a node: where its key is written (key_at) or
// where its value starts (value_at).
std::string key_at(const std::string& path, const TomlNode& n);
std::string value_at(const std::string& path, const TomlNode& n);

// Parses TOML 1.0. InputError "PATH:LINE:COL: toml: what toml++ says" on a syntax error, and
// check_toml_bounds' refusal first.
TomlNode parse_toml(const std::string& text, const std::string& path);

// InputError "PATH:LINE:COL: toml: ..." at the first level past kMaxJsonDepth (an open array or
// inline table, a table header's or dotted key's segment: toml++ recurses on each) or the item
// past kMaxYamlSeparators (keys, entries, tables: toml++ allocates each); toml_bounds.cc.
void check_toml_bounds(const std::string& text, const std::string& path);

}  // namespace muonplan
