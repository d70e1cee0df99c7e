// Strict, located reading of YAML mappings for every muonplan input format: each field is read
// with its type checked, unknown fields are refused, and every error carries FILE:LINE:COL.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "muonplan/base/error.h"

namespace muonplan::detail {

// Bytes that can separate two YAML nodes (, : - ? [ { and a line break), at most: each node
// yaml-cpp builds costs about 500 bytes of memory (measured: 262144 flow items, +120 MB), so a
// 64 MiB file of "1,1,1,..." would take gigabytes. muonplan's YAML formats (models, topologies,
// calibration, training runs) hold a few hundred; 65536 bounds the parse to about 30 MB.
inline constexpr int64_t kMaxYamlSeparators = int64_t{1} << 16;

// Parses text as YAML; a syntax error becomes an InputError at the parser's position, and so
// does a key given twice in one mapping ("FILE:LINE:COL: a.b: given twice, at lines A and B").
// Text with more than kMaxYamlSeparators separators is refused before it is parsed, at the
// first one past the bound.
YAML::Node parse_yaml_text(const std::string& text, const std::string& path);

class YamlMap {
 public:
  // node must be a mapping; `where` is its dotted path for messages ("" for the document root).
  YamlMap(YAML::Node node, std::string path, std::string where);

  bool has(const std::string& key) const;
  int64_t get_int(const std::string& key) const;
  int64_t get_int(const std::string& key, int64_t fallback) const;
  double get_double(const std::string& key) const;
  double get_double(const std::string& key, double fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;
  std::string get_string(const std::string& key) const;
  std::string get_string(const std::string& key, const std::string& fallback) const;
  std::vector<int64_t> get_int_list(const std::string& key) const;  // [] when absent
  std::vector<double> get_double_list(const std::string& key) const;
  YamlMap get_map(const std::string& key) const;
  std::optional<YamlMap> get_optional_map(const std::string& key) const;
  YAML::Node raw(const std::string& key) const;  // undefined node when absent

  // Refuses keys not in `allowed` (call after reading, with every key the format knows).
  void check_known(const std::set<std::string>& allowed) const;

  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  [[noreturn]] void fail_at(const YAML::Node& node, const std::string& key,
                            const std::string& message) const;
  SourceLoc loc_of(const YAML::Node& node) const;
  std::string field(const std::string& key) const;
  const std::string& path() const { return path_; }
  const YAML::Node& node() const { return node_; }

 private:
  YAML::Node require(const std::string& key) const;
  YAML::Node node_;
  std::string path_;
  std::string where_;
};

}  // namespace muonplan::detail
