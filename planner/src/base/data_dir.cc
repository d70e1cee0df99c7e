#include "muonplan/planner/data_dir.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace muonplan {
namespace fs = std::filesystem;

namespace {

// The file (executable or shared object) this function was loaded from.
fs::path own_file() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&own_file), &info) == 0 || !info.dli_fname) return {};
  std::error_code ec;
  const fs::path p = fs::canonical(info.dli_fname, ec);
  return ec ? fs::path(info.dli_fname) : p;
}

}  // namespace

std::string data_dir() {
  if (const char* env = std::getenv("MUONPLAN_DATA_DIR"); env && *env) return env;
  const fs::path self = own_file();
  // PREFIX/bin/muonplan and BUILD/cli/muonplan are one level below PREFIX and BUILD; the
  // Python module sits deeper (PREFIX/lib/python3/dist-packages/): look up a few levels.
  std::string looked;
  fs::path dir = self.parent_path();
  for (int up = 0; up < 5 && !dir.empty(); ++up) {
    const fs::path candidate = dir / "share" / "muonplan";
    std::error_code ec;
    if (fs::is_directory(candidate / "topologies", ec)) return candidate.string();
    looked += (looked.empty() ? "" : ", ") + candidate.string();
    if (dir == dir.parent_path()) break;
    dir = dir.parent_path();
  }
  throw std::runtime_error("muonplan: no data directory (share/muonplan) beside " + self.string() +
                           " (looked in " + looked + "); set MUONPLAN_DATA_DIR");
}

std::string data_path(const std::string& relative) {
  return data_dir() + "/" + relative;
}

}  // namespace muonplan
