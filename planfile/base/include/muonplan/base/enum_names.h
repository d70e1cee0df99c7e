// One name table per enum: the names the CLI, the plan file, the YAML formats and the Python
// bindings use, and from them the parse, the print, the error's list of choices and the
// `--help` text. Adding a value to a table adds it everywhere at once.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "muonplan/base/error.h"

namespace muonplan {

template <class E>
struct EnumName {
  E value;
  const char* name;
};

// The value named `name`, if any.
template <class E, size_t N>
std::optional<E> enum_from_name(const EnumName<E> (&table)[N], const std::string& name) {
  for (const EnumName<E>& e : table) {
    if (name == e.name) return e.value;
  }
  return std::nullopt;
}

template <class E, size_t N>
const char* enum_name(const EnumName<E> (&table)[N], E value) {
  for (const EnumName<E>& e : table) {
    if (e.value == value) return e.name;
  }
  return "?";
}

// Every name, then `extra` (values a flag takes besides the enum's, such as "auto").
template <class E, size_t N>
std::vector<std::string> enum_names(const EnumName<E> (&table)[N],
                                    std::initializer_list<const char*> extra = {}) {
  std::vector<std::string> names;
  for (const EnumName<E>& e : table) names.emplace_back(e.name);
  names.insert(names.end(), extra.begin(), extra.end());
  return names;
}

// "a, b or c": the list in error messages ("expected a, b or c, got 'x'").
std::string choices_text(const std::vector<std::string>& names);
// "a | b | c": the list in --help.
std::string choices_help(const std::vector<std::string>& names);

// The value of `flag` named `name`; InputError "FLAG: expected a, b or c, got 'x'" listing the
// table's names and `extra` (the flag's other values, such as "auto", which the caller handles).
template <class E, size_t N>
E parse_enum(const EnumName<E> (&table)[N], const std::string& name, const char* flag,
             std::initializer_list<const char*> extra = {}) {
  if (const std::optional<E> v = enum_from_name(table, name)) return *v;
  throw InputError(
      {}, flag,
      "expected " + choices_text(enum_names(table, extra)) + ", got '" + brief(name) + "'");
}

}  // namespace muonplan
