// muonplan: the command-line front end. Exit codes (docs/cli-contract.md): 0 success, 2 bad input
// (one line naming file, line and field), 1 runtime failure.
#include <csignal>
#include <iostream>
#include <map>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "muonplan/base/error.h"
#include "muonplan/base/suggest.h"
#include "muonplan/planfile/plan_checks.h"
#include "muonplan/planner/plan_flag_table.h"
#include "muonplan/tools/child_process.h"

// " while reading --model m.yaml, --plan p.json" for the input files given to the command that
// ran out of memory (std::bad_alloc carries no file), or "".
std::string inputs_given(CLI::App& app) {
  std::string out;
  for (CLI::App* sub : app.get_subcommands()) {
    for (const char* flag : {"--model", "--topology", "--plan", "--metrics", "--trace",
                             "--workload", "--trainer-config", "--published"}) {
      const CLI::Option* o = sub->get_option_no_throw(flag);
      if (o == nullptr || o->count() == 0) continue;
      for (const std::string& v : o->results())
        out += (out.empty() ? "" : ", ") + std::string(flag) + " " + v;
    }
  }
  return out.empty() ? "" : " while reading " + out;
}

// " (did you mean --nodes?)" when an unexpected argument is a flag close to one of the
// command's own, else "".
std::string flag_suggestion(CLI::App& app, const CLI::ParseError& e) {
  const std::string what = e.what(), lead = "not expected: ";
  const size_t at = what.find(lead);
  if (at == std::string::npos) return "";
  CLI::App* cmd = &app;  // the deepest command given
  while (!cmd->get_subcommands().empty()) cmd = cmd->get_subcommands().front();
  std::vector<std::string> known;
  for (const CLI::Option* o : cmd->get_options())
    for (const std::string& n : o->get_lnames()) known.push_back("--" + n);
  std::istringstream args(what.substr(at + lead.size()));
  for (std::string arg; args >> arg;) {
    if (arg.rfind("--", 0) != 0) continue;
    // A flag of plan's search that report leaves out (it sweeps them) is no typo: `report
    // --offload full` was asked "did you mean --workload?".
    for (const muonplan::PlanFlagInfo& info : muonplan::plan_flag_table()) {
      if (info.search_only && cmd->get_name() == "report" &&
          arg.substr(0, arg.find('=')) == "--" + info.name)
        return " (report sweeps the node counts and offload modes: " +
               arg.substr(0, arg.find('=')) + " is a flag of `muonplan plan`, which plans one)";
    }
    const std::string meant = muonplan::closest_name(arg.substr(0, arg.find('=')), known);
    if (!meant.empty()) return " (did you mean " + meant + "?)";
  }
  return "";
}

// ": 'plna' is not a command (did you mean plan?)" when the first argument is a word that names
// no command: CLI11 says only "A subcommand is required". The word is cut and escaped by the
// names rule (printable), as every quoted name is.
std::string command_suggestion(CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-' || argv[1][0] == '\0') return "";
  const std::string word = argv[1];
  std::vector<std::string> names;
  for (CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == word) return "";
    names.push_back(sub->get_name());
  }
  const std::string shown = word.size() > 60 ? word.substr(0, 60) + "..." : word;
  const std::string meant = muonplan::closest_name(word.substr(0, 64), names);
  return ": '" + muonplan::printable(shown) + "' is not a command" +
         (meant.empty() ? "" : " (did you mean " + meant + "?)");
}

int main(int argc, char** argv) {
  // A write past `ulimit -f` then fails with EFBIG, which every writer reports and cleans up
  // after ("cannot write PATH: File too large", exit 1), instead of killing the process with
  // SIGXFSZ and leaving its temporary files (docs/reliability.md).
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"muonplan: plan and run the sharded Muon optimizer step for large models"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("muonplan ") + MUONPLAN_VERSION);
  std::map<CLI::App*, muonplan::cli::Runner> runners;
  auto reg = [&](muonplan::cli::Runner (*add)(CLI::App&)) {
    const size_t before = app.get_subcommands({}).size();
    muonplan::cli::Runner run = add(app);
    runners[app.get_subcommands({})[before]] = std::move(run);
  };
  reg(muonplan::cli::add_inspect);
  reg(muonplan::cli::add_plan);
  reg(muonplan::cli::add_cost);
  reg(muonplan::cli::add_bench);
  reg(muonplan::cli::add_validate);
  reg(muonplan::cli::add_calibrate);
  reg(muonplan::cli::add_execute);
  reg(muonplan::cli::add_topology);
  reg(muonplan::cli::add_report);
  muonplan::cli::add_help_examples(app);
  if (argc == 1) {  // no command: what the commands are and how each is used, exit 2
    std::cerr << muonplan::cli::usage_with_examples(app);
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // A hidden option (a test hook) has no name in CLI11's errors, ": what": its message
    // names it.
    const std::string what = e.what();
    std::cerr << "muonplan: " << (what.rfind(": ", 0) == 0 ? what.substr(2) : what)
              << command_suggestion(app, argc, argv) << flag_suggestion(app, e) << "\n";
    return 2;
  } catch (const muonplan::InputError& e) {  // a flag checked while parsing (plan_flags.cc)
    std::cerr << e.what() << "\n";
    return 2;
  }
  try {
    for (auto* sub : app.get_subcommands()) return runners.at(sub)();
  } catch (const muonplan::InputError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const muonplan::Interrupted& e) {
    // report.py has exited and the staging directory is gone: end by the signal, as without
    // a child (exit 128 + signal to the shell).
    std::signal(e.signal, SIG_DFL);
    std::raise(e.signal);
    return 128 + e.signal;
  } catch (const std::bad_alloc&) {
    std::cerr << "muonplan: error: out of memory" << inputs_given(app) << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "muonplan: error: " << e.what() << "\n";
    return 1;
  }
  return 1;
}
