#include "muonplan/error.h"

namespace muonplan {
namespace {

std::string format(const SourceLoc& loc, const std::string& field, const std::string& message) {
  std::string out;
  if (!loc.file.empty()) {
    out += loc.file;
    if (loc.line > 0) out += ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
    out += ": ";
  }
  if (!field.empty()) out += field + ": ";
  return out + message;
}

}  // namespace

InputError::InputError(const SourceLoc& loc, const std::string& field, const std::string& message)
    : std::runtime_error(format(loc, field, message)),
      loc_(loc),
      field_(field),
      message_(message) {}

}  // namespace muonplan
