#include "muonplan/base/error.h"

#include <sstream>

namespace muonplan {

std::string brief(std::string_view text) {
  if (text.size() <= kQuotedChars) return std::string(text);
  size_t cut = kQuotedChars - 3;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "...";
}

namespace {

std::string bounded(const std::string& message) {
  if (message.size() <= kMaxMessageBytes) return message;
  const size_t keep = kMaxMessageBytes / 2;
  return message.substr(0, keep) + " ... (" + std::to_string(message.size() - 2 * keep) +
         " bytes cut) ... " + message.substr(message.size() - keep);
}

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
    : std::runtime_error(format(loc, bounded(field), bounded(message))),
      loc_(loc),
      field_(bounded(field)),
      message_(bounded(message)) {}

}  // namespace muonplan
