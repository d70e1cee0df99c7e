// Where a report is written (docs/report.md, "Where it writes"). A report replaces the files of
// its directory, so muonplan writes only into a new or empty directory, or one it wrote before
// (marked by the file `.muonplan-report`, and holding nothing but regular files: a symbolic
// link there would be written through into the file it names). Everything is written into a
// staging directory beside DIR first and swapped in whole: a report that fails half-way leaves
// DIR as it was, without another run's plots mixed into it.
#pragma once

#include <string>

namespace muonplan {

inline constexpr const char* kReportMarker = ".muonplan-report";

class ReportDir {
 public:
  // Checks DIR (InputError "--out: DIR: ...", exit 2, before anything is written) and makes the
  // staging directory `.NAME.report.PID` beside it, with the marker inside.
  explicit ReportDir(const std::string& dir);
  ~ReportDir();  // removes the staging directory unless published
  ReportDir(const ReportDir&) = delete;
  ReportDir& operator=(const ReportDir&) = delete;

  const std::string& staging() const { return staging_; }
  const std::string& path() const { return dir_; }  // DIR, normalised
  // Puts the staging directory in DIR's place; the old DIR is removed.
  void publish();

 private:
  std::string dir_, staging_;
  bool published_ = false;
};

}  // namespace muonplan
