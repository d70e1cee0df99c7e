// Paths given on the command line (docs/reliability.md, "Paths"): an empty path is an input
// error, never "not given" (an empty --resume once trained from step 1 over a good checkpoint),
// and no output may be an input, another output, or a file inside a checkpoint directory.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <utility>
#include <vector>

#include "muonplan/planner/model_resolve.h"
#include "muonplan/planner/plan_request.h"

namespace muonplan::cli {

// Refuses an empty value of the option it checks: "--resume: an empty path; give a path".
CLI::Validator non_empty_path();

// One path argument of a command: a file, or a directory whose contents the command reads or
// replaces (a checkpoint, a report directory).
struct PathArg {
  PathArg(std::string f, std::string p, bool d = false, std::string w = {})
      : flag(std::move(f)), path(std::move(p)), dir(d), what(std::move(w)) {}
  std::string flag, path;
  bool dir = false;
  std::string what;  // in messages after the flag: "'s staging directory" (DIR.tmp); "": itself
};

// The path arguments of a checkpoint directory DIR: DIR, DIR.tmp and DIR.old (a save and a
// resume touch all three) and, for a save, its lock file DIR.lock.
std::vector<PathArg> checkpoint_paths(const std::string& flag, const std::string& dir, bool save);

// A save into DIR.tmp or DIR.old beside a muonplan checkpoint DIR: DIR's next save would
// replace it (DIR.tmp is its staging directory, DIR.old its previous copy). InputError.
void refuse_checkpoint_sibling(const std::string& flag, const std::string& dir);

// InputError "--out: PATH is the same file as --model (...)" (exit 2) when an output is an input
// or another output (resolved: links followed, hard links compared by inode), lies inside an
// input or output directory or inside a muonplan checkpoint, or an input lies inside an output
// directory. Empty paths (options not given) are skipped. An output directory may equal an
// input one: `--resume ck --checkpoint ck` continues a run in place.
void refuse_overlaps(const std::vector<PathArg>& inputs, const std::vector<PathArg>& outputs);

// InputError when two of a fit's runs (--metrics, --training-run, --holdout) are the same file
// (device and inode, else the normalized path): a held-out run that is also fitted checks
// nothing, and a run given twice weighs double.
void refuse_repeated_runs(const std::vector<PathArg>& runs);

// The input files of a planning command: --model, --topology and the plan flags' --workload and
// --trainer-config.
std::vector<PathArg> plan_inputs(const std::string& model, const std::string& topology,
                                 const PlanFlags& flags);

// The file a model name resolved to (--model DIR -> DIR/config.json, an HF id -> its snapshot's
// config.json, a bundled name -> models/NAME.yaml; with no --model, the trainer config's
// model.name): an input like the typed ones, so no output may replace it. `model`: --model's
// argument, empty when the trainer config named the model.
PathArg resolved_model_input(const std::string& model, const ResolvedModel& resolved);

}  // namespace muonplan::cli
