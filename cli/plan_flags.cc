// The plan flags, registered once for every command that plans (plan, report), from the one
// table the Python bindings' keywords come from too (plan_flag_table.h). Every value goes
// through set_plan_flag, so a malformed number gets the same message from both front ends.
#include "commands.h"
#include "muonplan/planner/plan_flag_table.h"
#include "paths.h"

namespace muonplan::cli {

void add_plan_flags(CLI::App* c, PlanFlags& f, bool search) {
  for (const PlanFlagInfo& info : plan_flag_table()) {
    if (info.search_only && !search) continue;  // report sweeps the nodes and offload modes
    const std::string name = info.name;
    if (info.type == "BOOL") {
      // --flag and --flag=true count up, --flag=false down (CLI11's flag values): the last
      // sign says which (--ac-offload=false set it true, and a default could not be declined).
      c->add_flag_function(
          "--" + name, [&f, name](int64_t n) { set_plan_flag(f, name, n > 0 ? "true" : "false"); },
          info.help);
      continue;
    }
    CLI::Option* o = c->add_option_function<std::string>(
        "--" + name, [&f, name](const std::string& v) { set_plan_flag(f, name, v); }, info.help);
    o->type_name(info.type);
    if (!info.default_text.empty()) o->default_str(info.default_text);
    if (info.type == "PATH") o->check(non_empty_path());
  }
}

}  // namespace muonplan::cli
