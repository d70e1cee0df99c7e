// A child process run to completion, with the signals that would end the parent passed on to
// it first (the report's Python script).
#pragma once
#include <string>
#include <vector>

namespace muonplan {

struct ChildResult {
  int exit_code = -1;  // WEXITSTATUS, or -1 when the child did not exit normally
  std::string stderr_text;
};

// Runs argv[0] (a path, or a name looked up in PATH) with `argv`, stdout to /dev/null, stderr
// captured, and waits for it. While it runs, SIGTERM, SIGINT and SIGHUP sent to this process are
// forwarded to the child and the child is waited for; such a signal is then raised again in this
// process under its previous disposition (a command exits 128+N after its child, never before: a
// report.py left behind went on writing the report after `muonplan report` had exited 143).
ChildResult run_child(const std::vector<std::string>& argv);

}  // namespace muonplan
