// One integer parser for every flag and input format: the whole text, decimal, an optional
// leading '-', nothing else (no spaces, no '+', no "12abc", no "1e3"), within [lo, hi].
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

namespace muonplan {

std::optional<int64_t> parse_int(const std::string& text,
                                 int64_t lo = std::numeric_limits<int64_t>::min(),
                                 int64_t hi = std::numeric_limits<int64_t>::max());

}  // namespace muonplan
