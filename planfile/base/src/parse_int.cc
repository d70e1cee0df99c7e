#include "muonplan/base/parse_int.h"

#include <charconv>

namespace muonplan {

std::optional<int64_t> parse_int(const std::string& text, int64_t lo, int64_t hi) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  // from_chars: no locale, no leading spaces or '+', and an out-of-range value is an error.
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || v < lo || v > hi) return std::nullopt;
  return v;
}

}  // namespace muonplan
