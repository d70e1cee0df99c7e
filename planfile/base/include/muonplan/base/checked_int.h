// Products and sums of integers a user gave (seq_len x world, tokens, rows, micro steps, layout
// products) go through these two functions: an overflow is an InputError naming both values,
// never a wrapped result (seq_len 2^30 x 2^34 ranks wrapped to 0, then divided by: SIGFPE,
// issue 33 item 11). FIELD is the key or flag the user set; WHAT names the two factors.
#pragma once

#include <cstdint>
#include <string>

#include "muonplan/base/error.h"

namespace muonplan {

inline int64_t checked_mul(int64_t a, int64_t b, const std::string& field, const std::string& what,
                           const SourceLoc& loc = {}) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) {
    throw InputError(loc, field,
                     what + " = " + std::to_string(a) + " x " + std::to_string(b) +
                         " overflows a 64-bit integer (at most 9223372036854775807)");
  }
  return r;
}

inline int64_t checked_add(int64_t a, int64_t b, const std::string& field, const std::string& what,
                           const SourceLoc& loc = {}) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) {
    throw InputError(loc, field,
                     what + " = " + std::to_string(a) + " + " + std::to_string(b) +
                         " overflows a 64-bit integer (at most 9223372036854775807)");
  }
  return r;
}

}  // namespace muonplan
