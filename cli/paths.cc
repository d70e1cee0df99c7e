// Path rules of the command line (paths.h).
#include "paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "muonplan/base/error.h"
#include "muonplan/base/paths.h"
#include "muonplan/planner/topology.h"

namespace muonplan::cli {
namespace {

namespace fs = std::filesystem;

// Where the file system will put or find `p`: absolute, links followed, dangling ones too.
fs::path resolved(const std::string& p) {
  return resolve_path(p);
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) {
    const bool eq = fs::equivalent(a, b, ec);
    if (!ec) return eq;
  }
  return resolved(a) == resolved(b);
}

// Whether `p` lies strictly below directory `dir`.
bool inside(const std::string& p, const std::string& dir) {
  const fs::path rp = resolved(p), rd = resolved(dir);
  auto d = rd.begin(), q = rp.begin();
  for (; d != rd.end(); ++d, ++q) {
    if (q == rp.end() || *d != *q) return false;
  }
  return q != rp.end();
}

std::string named(const PathArg& a) {
  return a.flag + a.what + " (" + a.path + ")";
}

// A path the command derived (DIR.old of --checkpoint DIR) is named with what it is.
[[noreturn]] void refuse(const PathArg& a, const std::string& why) {
  const std::string subject = a.what.empty() ? a.path : a.path + ", " + a.flag + a.what + ",";
  throw InputError({}, a.flag, subject + " " + why);
}

// An output against an input or an earlier output.
void check_pair(const PathArg& out, const PathArg& other, bool other_is_input) {
  if (out.flag == other.flag) return;  // one argument's own paths (DIR, DIR.tmp, ...)
  const char* role = other_is_input ? "an input" : "another output";
  const bool same = same_file(out.path, other.path);
  if (!out.dir && !other.dir && same)
    refuse(out, "is the same file as " + named(other) + ", " + role + "; write it elsewhere");
  // One path as a file and a directory argument (a checkpoint's DIR.tmp, DIR.old: the next save
  // or resume would find a file there and refuse, or read it), or as two directories of
  // different roles (a save clears its DIR.tmp and DIR.old before it writes). `--resume ck
  // --checkpoint ck` continues a run in place: DIR onto DIR, DIR.tmp onto DIR.tmp.
  if (same && (out.dir != other.dir || (out.dir && out.what != other.what)))
    refuse(out, "is the path of " + named(other) + ", " + role + "; write it elsewhere");
  if (!out.dir && other.dir && inside(out.path, other.path))
    refuse(out, "is inside " + std::string(other.what.empty() ? "the directory of " : "") +
                    named(other) + "; write it elsewhere");
  if (out.dir && !other.dir && inside(other.path, out.path))
    refuse(out, "holds " + named(other) + ", and the command replaces its contents");
  if (out.dir && other.dir && !same &&
      (inside(out.path, other.path) || inside(other.path, out.path)))
    refuse(out, "and " + named(other) + " are nested directories; keep them apart");
}

// An output file that no write could ever create, refused before the command does its work (a
// long execute would otherwise end in "cannot write"): a directory, a path ending in '/', or
// one whose directory does not exist. A write can still fail at the end (a full disk): exit 1.
void check_writable_file(const PathArg& out) {
  std::error_code ec;
  if (out.path.back() == '/') refuse(out, "ends with '/': give a file's path");
  if (fs::is_directory(out.path, ec)) refuse(out, "is a directory: give a file's path");
  const fs::path parent = fs::absolute(out.path, ec).parent_path();
  if (!fs::is_directory(parent, ec)) {
    refuse(out, "cannot be written: its directory " + parent.string() + " does not exist");
  }
}

// Standard output redirected onto an input (`plan --trainer-config my.toml --emit prime-rl >
// my.toml`): the shell has emptied the file before muonplan starts, so what muonplan would read
// is no longer the user's file. Compared by device and inode, as the outputs are; an output
// file that is also standard output would get both the command's write and the printed text.
void check_stdout(const std::vector<PathArg>& inputs, const std::vector<PathArg>& outputs) {
  struct stat so {};
  if (fstat(STDOUT_FILENO, &so) != 0 || !S_ISREG(so.st_mode)) return;
  auto is_stdout = [&](const PathArg& a) {
    struct stat st {};
    return !a.path.empty() && !a.dir && stat(a.path.c_str(), &st) == 0 && st.st_dev == so.st_dev &&
           st.st_ino == so.st_ino;
  };
  for (const PathArg& in : inputs) {
    if (!is_stdout(in)) continue;
    throw InputError({}, in.flag,
                     "standard output is the same file as " + named(in) +
                         ", an input: the shell emptied it before muonplan started (restore it "
                         "from a backup or version control). Redirect the output elsewhere; to "
                         "write an emitted config over its input, use plan --emit-out FILE "
                         "(atomic, keeps FILE.bak)");
  }
  for (const PathArg& out : outputs) {
    if (is_stdout(out))
      refuse(out, "is also standard output, where the command prints; redirect one elsewhere");
  }
}

}  // namespace

CLI::Validator non_empty_path() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        return value.empty() ? "an empty path; give a path (leave the option out to skip it)"
                             : std::string();
      },
      "PATH", "non-empty path");
}

std::vector<PathArg> checkpoint_paths(const std::string& flag, const std::string& dir, bool save) {
  if (dir.empty()) return {};
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  std::vector<PathArg> out = {{flag, d, true},
                              {flag, d + ".tmp", true, "'s staging directory"},
                              {flag, d + ".old", true, "'s previous checkpoint"}};
  if (save) out.push_back({flag, d + ".lock", false, "'s lock file"});
  return out;
}

void refuse_checkpoint_sibling(const std::string& flag, const std::string& dir) {
  for (const char* suffix : {".tmp", ".old"}) {
    const std::string s = suffix;
    if (dir.size() <= s.size() || dir.compare(dir.size() - s.size(), s.size(), s) != 0) continue;
    const std::string base = dir.substr(0, dir.size() - s.size());
    if (!holds_checkpoint(base)) continue;
    throw InputError({}, flag,
                     dir + " is where a save of the checkpoint " + base +
                         (s == ".tmp" ? " stages its files" : " keeps its previous checkpoint") +
                         ", and that save would replace it: choose another name");
  }
}

void refuse_overlaps(const std::vector<PathArg>& inputs, const std::vector<PathArg>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const PathArg& out = outputs[i];
    if (out.path.empty()) continue;
    for (const PathArg& in : inputs) {
      if (!in.path.empty()) check_pair(out, in, true);
    }
    for (size_t j = 0; j < i; ++j) {
      const PathArg& other = outputs[j];
      if (other.path.empty()) continue;
      // A file inside an output directory, or onto a path muonplan names itself (DIR.lock), is
      // named as the given file's fault, whichever came first.
      if ((out.dir && !other.dir) || (!out.what.empty() && other.what.empty()))
        check_pair(other, out, false);
      else
        check_pair(out, other, false);
    }
    // Any output, file or directory, at any depth (ck/sub/x.json, a report in ck/rep, a
    // checkpoint in ck/sub), through links dangling or not: ck's next save would refuse it.
    const std::string ck = enclosing_checkpoint(out.path);
    if (!ck.empty()) {
      refuse(out, "is inside a muonplan checkpoint directory (" + ck +
                      "), which holds only the checkpoint's files; write it elsewhere");
    }
  }
  check_stdout(inputs, outputs);
  // After every overlap, whose messages say more (a file inside a checkpoint to be made).
  for (const PathArg& out : outputs) {
    if (!out.path.empty() && !out.dir) check_writable_file(out);
  }
}

void refuse_repeated_runs(const std::vector<PathArg>& runs) {
  for (size_t i = 0; i < runs.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (!same_file(runs[i].path, runs[j].path)) continue;
      const bool both = runs[i].flag != runs[j].flag;
      throw InputError({}, runs[i].flag,
                       runs[i].path + " is the same file as " + runs[j].flag + " " + runs[j].path +
                           (both ? ": a run is fitted or held out, not both (the check would "
                                   "repeat the fit)"
                                 : ": a run given twice counts twice in the fit; give it once"));
    }
  }
}

std::vector<PathArg> plan_inputs(const std::string& model, const std::string& topology,
                                 const PlanFlags& flags) {
  // A bundled name or HF id is no path here: `report --model qwen3-8b --out .` in an empty
  // folder was refused as if ./qwen3-8b were a file the report would replace. A name that is
  // not a file is compared as the file it resolves to (resolved_model_input, the topology's
  // bundled file).
  std::error_code ec;
  return {{"--model", fs::exists(model, ec) ? model : ""},
          {"--topology", fs::exists(topology, ec) ? topology : resolve_topology_path(topology)},
          {"--workload", flags.workload},
          {"--trainer-config", flags.trainer_config}};
}

PathArg resolved_model_input(const std::string& model, const ResolvedModel& resolved) {
  if (model.empty()) return {"--trainer-config", resolved.path, false, "'s model.name"};
  return {"--model", resolved.path, false, resolved.path == model ? "" : "'s file"};
}

}  // namespace muonplan::cli
