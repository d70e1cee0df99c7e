// A child process run to completion, with the signals that would end the parent passed on to
// it first (the report's Python script).
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace muonplan {

struct ChildResult {
  int exit_code = -1;  // WEXITSTATUS, or -1 when the child did not exit normally
  std::string stderr_text;
};

// A signal forwarded to the child (run_child): thrown once the child has exited, so that what
// the command made (the report's staging directory) is removed while unwinding; `muonplan`
// then ends by that signal (exit 128 + signal).
class Interrupted : public std::runtime_error {
 public:
  explicit Interrupted(int sig)
      : std::runtime_error("interrupted by signal " + std::to_string(sig)), signal(sig) {}
  int signal;
};

// Runs argv[0] (a path, or a name looked up in PATH) with `argv`, stdout to /dev/null, stderr
// captured, and waits for it. While it runs, SIGTERM, SIGINT and SIGHUP sent to this process
// are forwarded to the child; once the child has exited, such a signal throws Interrupted (a
// command ends after its child, never before: a report.py left behind went on writing the
// report after `muonplan report` had exited 143).
ChildResult run_child(const std::vector<std::string>& argv);

}  // namespace muonplan
