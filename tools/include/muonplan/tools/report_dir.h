// Where a report (or any directory of files muonplan fills: `bench ns --dump`) is written
// (docs/report.md, "Where it writes"). Such a command replaces the files of its directory, so
// muonplan writes only into a new or empty directory, or one the same command wrote before
// (marked by its marker file, `.muonplan-report` for a report, and holding nothing but regular
// files: a symbolic link there would be written through into the file it names), and never
// inside a checkpoint (whose next save would refuse the stranger). Everything is written into a
// staging directory beside DIR first and swapped in whole: a command that fails half-way leaves
// DIR as it was, without another run's files mixed into it.
#pragma once

#include <string>

namespace muonplan {

inline constexpr const char* kReportMarker = ".muonplan-report";

// Which command owns a directory: the flag that names it, what it holds (for messages) and the
// marker file that says this command wrote it.
struct DirOwner {
  const char* flag;
  const char* what;
  const char* marker;
};
inline constexpr DirOwner kReportOwner = {"--out", "a report", kReportMarker};
inline constexpr DirOwner kBenchDumpOwner = {"--dump", "a bench dump", ".muonplan-bench-dump"};

class ReportDir {
 public:
  // Checks DIR (InputError "FLAG: DIR: ...", exit 2, before anything is written) and makes the
  // staging directory `.NAME.report.PID` beside it, with the owner's marker inside.
  explicit ReportDir(const std::string& dir, const DirOwner& owner = kReportOwner);
  ~ReportDir();  // removes the staging directory unless published
  ReportDir(const ReportDir&) = delete;
  ReportDir& operator=(const ReportDir&) = delete;

  const std::string& staging() const { return staging_; }
  const std::string& path() const { return dir_; }  // DIR, normalised
  // Puts the staging directory in DIR's place; the old DIR is removed.
  void publish();

 private:
  DirOwner owner_;
  std::string dir_, staging_;
  bool published_ = false;
};

}  // namespace muonplan
