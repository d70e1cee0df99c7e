// Model names to files, in the order docs/trainer-config.md gives: a path, a directory holding
// config.json, a bundled short name, the local Hugging Face cache, a bundled spec's hf_id.
#include "muonplan/planner/model_resolve.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "muonplan/base/io.h"
#include "muonplan/base/suggest.h"
#include "muonplan/planfile/plan_checks.h"
#include "muonplan/planner/data_dir.h"
#include "muonplan/planner/model_io.h"

namespace muonplan {
namespace fs = std::filesystem;
namespace {

// A revision is a commit hash (40 characters) or a branch or tag name: 256 bytes is ample.
constexpr int64_t kMaxRevisionBytes = 256;

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

bool same_ignoring_case(const std::string& a, const std::string& b) {
  return a.size() == b.size() && edit_distance(a, b) == 0;
}

// The revision refs/main names ("" when there is no refs/main): the hub writes a 40-digit
// commit hash there, and any revision is a name, a directory of snapshots/. So the file must be
// a regular file of a few bytes (a FIFO would block the read, /dev/zero never ends) holding one
// name: no separator, no "..", no control character; anything else is refused, never used as
// a path (`../../..` planned a config.json outside the cache) nor passed over for another
// snapshot.
std::string read_revision(const fs::path& ref) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(ref, ec))) return "";
  std::string text = read_input_file(ref.string(), "revision", kMaxRevisionBytes);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  std::string why = text_problem(text);
  if (text.empty()) why = "is empty; expected the snapshot's name (a commit hash)";
  if (why.empty() && (text.find_first_of("/\\ ") != std::string::npos ||
                      text.find("..") != std::string::npos || text == ".")) {
    why = "'" + brief(text) + "' is not a revision name (no separators, spaces or '..')";
  }
  if (!why.empty()) throw InputError({ref.string(), 0, 0}, "revision", why);
  return text;
}

// A hub snapshot's config.json: refs/main names the snapshot; without it any snapshot that has
// one (the newest by name, so the choice does not depend on directory order).
std::string cached_config(const std::string& id, std::vector<std::string>& looked) {
  const size_t slash = id.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == id.size() ||
      id.find('/', slash + 1) != std::string::npos)
    return "";
  fs::path repo =
      fs::path(hf_hub_cache()) / ("models--" + id.substr(0, slash) + "--" + id.substr(slash + 1));
  looked.push_back(repo.string() + " (Hugging Face cache)");
  // The Hub matches ids without regard to case, so the cache's folder may be spelt otherwise.
  std::error_code ec;
  if (!fs::exists(repo, ec)) {
    for (const auto& e : fs::directory_iterator(repo.parent_path(), ec)) {
      if (same_ignoring_case(e.path().filename().string(), repo.filename().string()))
        repo = e.path();
    }
  }
  const std::string hash = read_revision(repo / "refs" / "main");
  if (!hash.empty() && is_file(repo / "snapshots" / hash / "config.json"))
    return (repo / "snapshots" / hash / "config.json").string();
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(repo / "snapshots", ec)) {
    if (is_file(e.path() / "config.json")) found.push_back((e.path() / "config.json").string());
  }
  std::sort(found.begin(), found.end());
  return found.empty() ? "" : found.back();
}

}  // namespace

std::string hf_hub_cache() {
  if (const char* c = std::getenv("HF_HUB_CACHE"); c && *c) return c;
  if (const char* h = std::getenv("HF_HOME"); h && *h) return std::string(h) + "/hub";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.cache/huggingface/hub";
}

std::vector<BundledModel> bundled_models() {
  std::vector<BundledModel> out;
  std::string dir;
  try {
    dir = data_path("models");
  } catch (const std::exception&) {
    return out;  // no data directory: nothing bundled
  }
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".yaml") continue;
    const ModelSpec s = load_model_yaml(e.path().string());
    out.push_back({e.path().stem().string(), s.hf_id, e.path().string()});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

ResolvedModel resolve_model(const std::string& name, const SourceLoc& at,
                            const std::string& field) {
  std::vector<std::string> looked;
  std::error_code ec;
  if (fs::is_directory(name, ec)) {
    const fs::path config = fs::path(name) / "config.json";
    if (is_file(config)) return {load_model(config.string()), config.string(), "directory"};
    return {load_model(name), name, "path"};  // "is a directory, not a file", as for any file
  } else if (fs::exists(name, ec) || name.find(".yaml") != std::string::npos ||
             name.find(".json") != std::string::npos) {
    return {load_model(name), name, "path"};  // a file, or one meant as one: its own error
  } else {
    looked.push_back(brief(name) + " (no such file or directory)");
  }
  const std::vector<BundledModel> bundled = bundled_models();
  for (const BundledModel& b : bundled) {
    if (b.name == name) return {load_model_yaml(b.path), b.path, "bundled"};
  }
  if (const std::string config = cached_config(name, looked); !config.empty())
    return {load_model(config), config, "hf cache"};
  for (const BundledModel& b : bundled) {
    if (!b.hf_id.empty() && same_ignoring_case(b.hf_id, name))
      return {load_model_yaml(b.path), b.path, "bundled hf_id"};
  }
  std::vector<std::string> known;
  for (const BundledModel& b : bundled) {
    known.push_back(b.name);
    if (!b.hf_id.empty()) known.push_back(b.hf_id);
  }
  std::string meant;
  for (const std::string& m : closest_model_names(name, known))
    meant += (meant.empty() ? "" : " or ") + m;
  looked.push_back(bundled.empty()
                       ? "bundled specs (no data directory)"
                       : "the bundled specs' names and hf_id (muonplan inspect --list)");
  std::string list;
  for (const std::string& l : looked) list += (list.empty() ? "" : "; ") + l;
  throw InputError(at, field,
                   "'" + brief(name) + "' not found" +
                       (meant.empty() ? "" : " (did you mean " + meant + "?)") +
                       "; looked in: " + list + " (nothing is downloaded)");
}

}  // namespace muonplan
