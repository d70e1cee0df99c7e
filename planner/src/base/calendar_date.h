// A day of the Gregorian calendar written YYYY-MM-DD: the one rule for --prime-rl-version and the
// prime-rl version table (2026-02-30 and year 0000 are no date; both were once taken).
#pragma once

#include <cctype>
#include <string>

namespace muonplan::detail {

inline bool is_calendar_date(const std::string& d) {
  if (d.size() != 10 || d[4] != '-' || d[7] != '-') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (!std::isdigit(static_cast<unsigned char>(d[i]))) return false;
  }
  const int year = std::stoi(d.substr(0, 4)), month = std::stoi(d.substr(5, 2)),
            day = std::stoi(d.substr(8, 2));
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return year >= 1 && month >= 1 && month <= 12 && day >= 1 &&
         day <= kDays[month - 1] + (month == 2 && leap);
}

// "expected a date YYYY-MM-DD of the calendar, got '...'", said of --prime-rl-version.
inline const char* kCalendarDateExpected = "expected a date YYYY-MM-DD of the calendar, got '";

}  // namespace muonplan::detail
