// Each subcommand registers its options on the app and returns the function that runs it.
// Commands hold no planning logic: they parse flags, call the libraries and print.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "muonplan/planner/plan_request.h"

namespace muonplan::cli {

using Runner = std::function<int()>;

Runner add_inspect(CLI::App& app);
Runner add_plan(CLI::App& app);
Runner add_cost(CLI::App& app);
Runner add_bench(CLI::App& app);  // bench ns: measured NS speed on a backend
// bench cpu-kernels (cmd_bench_cpu.cc): host kernels' GB/s beside STREAM triad; registered by
// add_bench on its `bench` subcommand.
Runner add_bench_cpu_kernels(CLI::App& bench);
Runner add_validate(CLI::App& app);
Runner add_calibrate(CLI::App& app);  // fit topology calibration to measured runs
Runner add_execute(CLI::App& app);
Runner add_report(CLI::App& app);  // capacity report: JSON data, then reports/report.py

// Registers the plan flags (plan_request.h) on a command; `search` adds --nodes, --max-nodes
// and --offload, which `report` replaces with its own sweep.
void add_plan_flags(CLI::App* cmd, PlanFlags& flags, bool search);

// The bundled default topology (topologies/h200-ib.yaml in the source tree).
std::string default_topology_path();
Runner add_topology(CLI::App& app);

// Each command's --help ends with its examples (help_examples.cc); a bare `muonplan` prints
// usage_with_examples: the commands, then one example of each.
void add_help_examples(CLI::App& app);
std::string usage_with_examples(CLI::App& app);

// Thousands separators for large counts: 30532122624 -> "30,532,122,624".
std::string with_commas(long long value);

}  // namespace muonplan::cli
