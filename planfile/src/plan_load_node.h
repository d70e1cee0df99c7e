// The plan reader's shared pieces (plan_load.cc reads the options and the decision,
// plan_load_tensors.cc the tensors and the chunks over them): a value of the plan file with the
// path that names it in errors, and the tensor and chunk readers.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "muonplan/base/enum_names.h"
#include "muonplan/base/error.h"
#include "muonplan/base/io.h"
#include "muonplan/planfile/plan_checks.h"
#include "muonplan/planfile/plan_file.h"

namespace muonplan::plan_load {

using json = nlohmann::json;

// A value in the plan with the dotted path that names it in errors ("chunks[3].owners[1]").
class Node {
 public:
  Node(const std::string& path, const json& value, std::string field)
      : path_(path), v_(value), field_(std::move(field)) {}

  [[noreturn]] void fail(const std::string& message) const {
    throw InputError({path_, 0, 0}, field_, message);
  }
  const std::string& field() const { return field_; }
  const std::string& path() const { return path_; }
  const json& raw() const { return v_; }

  bool has(const std::string& key) const { return v_.is_object() && v_.contains(key); }
  // Refuses keys plan_to_json does not write: a misspelt key would otherwise be ignored.
  void only(std::initializer_list<const char*> known) const {
    if (!v_.is_object()) fail("expected an object, got " + json_brief(v_));
    for (const auto& item : v_.items()) {
      bool ok = false;
      for (const char* k : known) ok = ok || item.key() == k;
      if (!ok) (*this)[item.key()].fail("unknown key (muonplan plan does not write it)");
    }
  }
  Node operator[](const std::string& key) const {
    if (!v_.is_object()) fail("expected an object, got " + json_brief(v_));
    const std::string field = field_.empty() ? key : field_ + "." + key;
    const auto it = v_.find(key);
    if (it == v_.end()) Node(path_, v_, field).fail("missing");
    return Node(path_, *it, field);
  }
  Node operator[](size_t i) const {
    return Node(path_, v_.at(i), field_ + "[" + std::to_string(i) + "]");
  }
  size_t size() const {
    if (!v_.is_array()) fail("expected an array, got " + json_brief(v_));
    return v_.size();
  }

  int64_t integer(int64_t lo, int64_t hi = INT32_MAX) const {
    if (!v_.is_number_integer()) fail("expected an integer, got " + json_brief(v_));
    // Past INT64_MAX nlohmann holds an unsigned, which get<int64_t> would turn negative.
    if (v_.is_number_unsigned() && v_.get<uint64_t>() > uint64_t(INT64_MAX))
      fail("expected an integer below 2^63, got " + json_brief(v_));
    const int64_t x = v_.get<int64_t>();
    if (x < lo || x > hi) {
      const std::string range = hi >= INT32_MAX
                                    ? ">= " + std::to_string(lo)
                                    : "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
      fail("expected an integer " + range + ", got " + std::to_string(x));
    }
    return x;
  }
  // lo_open: the value must exceed lo (a positive rate), not merely reach it.
  double number(double lo = -HUGE_VAL, bool lo_open = false, double hi = HUGE_VAL) const {
    if (!v_.is_number()) fail("expected a number, got " + json_brief(v_));
    const double x = v_.get<double>();
    if (!std::isfinite(x) || x < lo || (lo_open && x == lo) || x > hi) {
      fail("out of range: " + json_brief(v_));
    }
    return x;
  }
  bool boolean() const {
    if (!v_.is_boolean()) fail("expected true or false, got " + json_brief(v_));
    return v_.get<bool>();
  }
  std::string string() const {
    if (!v_.is_string()) fail("expected a string, got " + json_brief(v_));
    if (const std::string why = text_problem(v_.get_ref<const std::string&>()); !why.empty())
      fail(why);
    return v_.get<std::string>();
  }
  // The enum value the string names, from the enum's name table (enum_names.h).
  template <class E, size_t N>
  E named(const EnumName<E> (&table)[N]) const {
    const std::string s = string();
    if (const std::optional<E> v = enum_from_name(table, s)) return *v;
    fail("expected " + choices_text(enum_names(table)) + ", got '" + s + "'");
  }

 private:
  const std::string& path_;
  const json& v_;
  std::string field_;
};

// The tensors (with their shards) and then the chunks over them, into `plan`, whose options
// (world, layout, owners) are read already; every index the executor takes from them is checked.
void read_inventory(const Node& root, Plan& plan);
void read_chunks(const Node& root, Plan& plan);

}  // namespace muonplan::plan_load
