#include "muonplan/base/enum_names.h"

namespace muonplan {

std::string choices_text(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) s += i + 1 == names.size() ? " or " : ", ";
    s += names[i];
  }
  return s;
}

std::string choices_help(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i > 0 ? " | " : "") + names[i];
  return s;
}

}  // namespace muonplan
