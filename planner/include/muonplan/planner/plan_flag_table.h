// The one table of plan options: every `muonplan plan` / `report` flag and every keyword of
// the Python bindings' plan() and report() is built from it (name, type, default, help), so
// the CLI and Python cannot drift (issue 36 item 14). set_plan_flag (plan_request.h) parses
// and checks each value, for both front ends alike.
#pragma once

#include <string>
#include <vector>

namespace muonplan {

struct PlanFlagInfo {
  std::string name;          // with dashes: "--NAME" on the command line, NAME_ in Python
  std::string type;          // INT, FLOAT, TEXT, PATH, BOOL (a flag without a value), FLOAT,FLOAT
  std::string default_text;  // as --help shows it; "" when the help says what applies
  std::string help;
  bool search_only = false;  // plan's search has it; report (which sweeps nodes and modes) not
};

// In the order `muonplan plan --help` lists them; exactly the names set_plan_flag accepts.
const std::vector<PlanFlagInfo>& plan_flag_table();

}  // namespace muonplan
