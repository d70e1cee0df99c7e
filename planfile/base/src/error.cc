#include "muonplan/base/error.h"

#include <sstream>

namespace muonplan {
namespace {

std::string format(const SourceLoc& loc, const std::string& field, const std::string& message) {
  std::ostringstream out;
  if (!loc.file.empty()) {
    out << loc.file;
    if (loc.line > 0) out << ':' << loc.line << ':' << loc.col;
    out << ": ";
  }
  if (!field.empty()) out << field << ": ";
  out << message;
  return out.str();
}

}  // namespace

InputError::InputError(const SourceLoc& loc, const std::string& field, const std::string& message)
    : std::runtime_error(format(loc, field, message)),
      loc_(loc),
      field_(field),
      message_(message) {}

}  // namespace muonplan
