// Where a path leads (paths.h).
#include "muonplan/base/paths.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <deque>

#include "muonplan/base/error.h"

namespace muonplan {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxLinks = 40;  // Linux's limit on links followed in one lookup

// The components of `p` after the root, front first.
std::deque<fs::path> components(const fs::path& p) {
  std::deque<fs::path> out;
  for (const fs::path& c : p.relative_path()) out.push_back(c);
  return out;
}

}  // namespace

fs::path resolve_path(const std::string& path) {
  std::error_code ec;
  const fs::path abs = fs::absolute(path, ec);
  if (ec) return fs::path(path).lexically_normal();
  std::deque<fs::path> rest = components(abs);
  fs::path done = abs.root_path();
  int links = 0;
  while (!rest.empty()) {
    const fs::path c = rest.front();
    rest.pop_front();
    if (c.empty() || c == ".") continue;
    if (c == "..") {
      done = done.parent_path();
      continue;
    }
    const fs::path next = done / c;
    if (links < kMaxLinks && fs::is_symlink(fs::symlink_status(next, ec))) {
      const fs::path target = fs::read_symlink(next, ec);
      if (!ec) {
        ++links;
        // The link's target replaces it: resolved from the root or from the link's directory.
        if (target.is_absolute()) done = target.root_path();
        std::deque<fs::path> more = components(target);
        rest.insert(rest.begin(), more.begin(), more.end());
        continue;
      }
    }
    done = next;
  }
  return done;
}

bool holds_checkpoint(const fs::path& dir) {
  const std::string manifest = (dir / "manifest.json").string();
  struct stat st = {};
  if (::stat(manifest.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  const int fd = ::open(manifest.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  char head[256] = {};
  ssize_t n = 0;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) n = ::read(fd, head, sizeof head - 1);
  ::close(fd);
  return n > 0 && std::string(head, size_t(n)).find("\"muonplan.checkpoint/") != std::string::npos;
}

std::string enclosing_checkpoint(const std::string& path) {
  const fs::path r = resolve_path(path);
  for (fs::path d = r.parent_path();; d = d.parent_path()) {
    if (holds_checkpoint(d)) return d.string();
    if (d == d.root_path() || d.empty()) return "";
  }
}

void refuse_inside_checkpoint(const std::string& flag, const std::string& path) {
  const std::string ck = enclosing_checkpoint(path);
  if (ck.empty()) return;
  throw InputError({}, flag,
                   path + " is inside a muonplan checkpoint directory (" + ck +
                       "), which holds only the checkpoint's files; write it elsewhere");
}

}  // namespace muonplan
