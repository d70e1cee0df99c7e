// The examples every command's --help ends with, and the usage a bare `muonplan` prints: one
// table, so the overview and each command's help name the same commands.
#include <algorithm>
#include <string>
#include <vector>

#include "commands.h"

namespace muonplan::cli {
namespace {

struct CommandExamples {
  const char* path;  // "plan", or "cost ns" for a subcommand's subcommand
  std::vector<const char*> lines;
};

const std::vector<CommandExamples>& examples() {
  static const std::vector<CommandExamples> table = {
      {"inspect",
       {"muonplan inspect --model glm-4.5-air", "muonplan inspect --model zai-org/GLM-4.5-Air",
        "muonplan inspect --list"}},
      {"plan",
       {"muonplan plan --model glm-4.5-air --tokens-per-step 2097152 --seq-len 131072",
        "muonplan plan --trainer-config examples/prime-rl/glm-4.5-air-rl-131k.toml",
        "muonplan plan --model qwen3-8b --nodes 1 --offload optimizer --emit prime-rl"}},
      {"cost ns",
       {"muonplan cost ns --batch 16 --rows 1408 --cols 4096",
        "muonplan cost ns --rows 4096 --cols 4096 --symmetric --json"}},
      {"bench ns",
       {"muonplan bench ns --backend cpu", "muonplan bench ns --backend cuda --variant both"}},
      {"bench cpu-kernels", {"muonplan bench cpu-kernels", "muonplan bench cpu-kernels --json"}},
      {"validate", {"muonplan validate", "muonplan validate --json"}},
      {"calibrate",
       {"muonplan calibrate --metrics a.json --metrics b.json --holdout c.json --out cal.yaml",
        "muonplan calibrate --training-run run.yaml --out cal.yaml"}},
      {"execute",
       {"mpirun -np 4 muonplan execute --plan plan.json --steps 3 --check-reference",
        "mpirun -np 8 muonplan execute --plan plan.json --backend cuda --metrics m.json"}},
      {"topology", {"muonplan topology", "muonplan topology --route n0.gpu0 n1.gpu3 --nodes 2"}},
      {"report",
       {"muonplan report --model glm-4.5-air --nodes 1..4 --out report-glm",
        "muonplan report --model qwen3-8b --tokens-per-step 1048576 --seq-len 4096 --out r"}},
  };
  return table;
}

// The subcommand at `path` ("cost ns": cost's ns), or nullptr.
CLI::App* find(CLI::App& app, const std::string& path) {
  CLI::App* at = &app;
  size_t from = 0;
  while (at && from <= path.size()) {
    const size_t space = std::min(path.find(' ', from), path.size());
    const std::string name = path.substr(from, space - from);
    CLI::App* next = nullptr;
    for (CLI::App* sub : at->get_subcommands({})) next = sub->get_name() == name ? sub : next;
    at = next;
    from = space + 1;
  }
  return at;
}

std::string block(const std::vector<const char*>& lines) {
  std::string out = "\nExamples:\n";
  for (const char* l : lines) out += "  " + std::string(l) + "\n";
  return out;
}

}  // namespace

void add_help_examples(CLI::App& app) {
  for (const CommandExamples& e : examples()) {
    if (CLI::App* c = find(app, e.path)) c->footer(block(e.lines));
  }
}

std::string usage_with_examples(CLI::App& app) {
  std::string out = app.help();
  out += "\nExamples (one per command; `muonplan COMMAND --help` shows more):\n";
  for (const CommandExamples& e : examples()) out += "  " + std::string(e.lines.front()) + "\n";
  return out;
}

}  // namespace muonplan::cli
