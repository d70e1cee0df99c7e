// Bounds on a TOML text's nesting and size, checked before toml++ parses it (toml_tree.h).
// toml++ recurses once per level of a table header or dotted key (`[a.a.a...]` 12,000 deep was
// a segfault, in the CLI and in Python) and builds ~200 bytes a value (a 60 MB array of 30M
// integers took 6.5 GB), so the text is scanned first, as JSON and YAML are (json_bounds.h,
// yaml_reader.h), with their bounds.
#include <cstdint>
#include <string>
#include <vector>

#include "muonplan/base/error.h"
#include "muonplan/base/json_bounds.h"
#include "muonplan/planner/yaml_reader.h"
#include "prime_rl/toml_tree.h"

namespace muonplan {
namespace {

// One pass over the text outside strings and comments. A level is an open array or inline
// table, a table header's segment or a dotted key's: `[a.b]` then `c.d = [{e = 1}]` reaches 6.
class TomlScan {
 public:
  TomlScan(const std::string& text, const std::string& path) : t_(text), path_(path) {}

  void run() {
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (c == '#') {
        while (i_ < t_.size() && t_[i_] != '\n') step();
        continue;
      }
      if (c == '"' || c == '\'') {
        skip_string(c);
        continue;
      }
      structure(c);
      step();
    }
  }

 private:
  struct Open {
    char bracket;
    int key_levels;  // the dotted key's levels this value sits under
  };

  void structure(char c) {
    if (c == '\n' && open_.empty()) {
      key_ = true;
      key_levels_ = 0;
    } else if (c == '[' || c == '{') {
      if (open_.empty() && key_ && key_levels_ == 0 && c == '[') header_ = true;
      if (header_ && open_.empty()) header_levels_ = 0;
      open_.push_back({c, header_ ? 0 : key_levels_});
      saved_ += open_.back().key_levels;
      key_ = c == '{' || header_;
      key_levels_ = 0;
      item();
    } else if ((c == ']' || c == '}') && !open_.empty()) {
      saved_ -= open_.back().key_levels;
      open_.pop_back();
      if (header_ && open_.empty()) {
        header_ = false;
        header_levels_ = key_levels_ + 1;
        key_levels_ = 0;
        key_ = false;
      }
    } else if (c == ',') {
      item();
      key_ = !open_.empty() && open_.back().bracket == '{';
      key_levels_ = 0;
    } else if (c == '=') {
      item();
      key_ = false;
    } else if (c == '.' && key_) {
      ++key_levels_;
    } else {
      return;
    }
    const int64_t depth = int64_t(open_.size()) + saved_ + key_levels_ + header_levels_;
    if (depth > kMaxJsonDepth) {
      throw InputError({path_, line_, col_}, "toml",
                       "nested deeper than " + std::to_string(kMaxJsonDepth) +
                           " levels (tables, dotted keys, arrays, inline tables); no trainer "
                           "config nests past a few");
    }
  }

  // A key, an array or inline-table entry, a table: what toml++ allocates a node for.
  void item() {
    if (++items_ > detail::kMaxYamlSeparators) {
      throw InputError({path_, line_, col_}, "toml",
                       "more than " + std::to_string(detail::kMaxYamlSeparators) +
                           " items (keys, array and inline-table entries, tables); no trainer "
                           "config holds as many");
    }
  }

  // A basic or literal string, one-line or multi-line: skipped, escapes included.
  void skip_string(char q) {
    const bool multi = t_.compare(i_, 3, std::string(3, q)) == 0;
    for (int k = 0; k < (multi ? 3 : 1); ++k) step();
    while (i_ < t_.size()) {
      if (q == '"' && t_[i_] == '\\') {
        step();
        if (i_ < t_.size()) step();
        continue;
      }
      if (multi ? t_.compare(i_, 3, std::string(3, q)) == 0 : t_[i_] == q) {
        for (int k = 0; k < (multi ? 3 : 1); ++k) step();
        return;
      }
      if (!multi && t_[i_] == '\n') return;  // unterminated: toml++ reports it
      step();
    }
  }

  void step() {
    if (t_[i_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++i_;
  }

  const std::string& t_;
  const std::string& path_;
  size_t i_ = 0;
  int line_ = 1, col_ = 1;
  std::vector<Open> open_;
  int64_t saved_ = 0;      // sum of open_'s key_levels
  int key_levels_ = 0;     // dots of the key being read
  int header_levels_ = 0;  // the last table header's segments
  bool key_ = true;        // reading a key (or a header)
  bool header_ = false;    // inside a [table] or [[array]] header
  int64_t items_ = 0;
};

}  // namespace

void check_toml_bounds(const std::string& text, const std::string& path) {
  TomlScan(text, path).run();
}

}  // namespace muonplan
