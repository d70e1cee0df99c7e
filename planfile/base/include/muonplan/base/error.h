// Errors a user can act on. Bad input (a malformed or inconsistent file, an impossible
// layout) is an InputError; the command-line front end prints what() on one line and exits 2.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace muonplan {

// Where in an input file a problem sits. line/col are 1-based; 0 means "unknown".
struct SourceLoc {
  std::string file;
  int line = 0;
  int col = 0;
};

// Text a user gave, as messages quote it: cut at kQuotedChars bytes (at a UTF-8 boundary),
// "..." marking the cut, so a 3 MB name gives a line, not 3 MB of stderr.
constexpr size_t kQuotedChars = 60;
std::string brief(std::string_view text);

// The most an InputError's message holds: past it the middle is cut ("... N bytes cut ..."),
// whatever a message quotes uncut.
constexpr size_t kMaxMessageBytes = 4096;

// what() is "FILE:LINE:COL: field: message" (LINE:COL omitted when unknown, FILE omitted when
// the input did not come from a file, e.g. a command-line flag).
class InputError : public std::runtime_error {
 public:
  InputError(const SourceLoc& loc, const std::string& field, const std::string& message);
  const SourceLoc& loc() const { return loc_; }
  const std::string& field() const { return field_; }
  const std::string& message() const { return message_; }

 private:
  SourceLoc loc_;
  std::string field_;
  std::string message_;
};

}  // namespace muonplan
