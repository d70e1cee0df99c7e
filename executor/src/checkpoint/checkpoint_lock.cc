// What a checkpoint path may replace, and the lock a run holds on it while it may write there
// (docs/reliability.md): only directories of muonplan checkpoints are ever replaced or removed.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "checkpoint/checkpoint_files.h"
#include "muonplan/base/error.h"
#include "muonplan/base/paths.h"
#include "muonplan/exec/checkpoint.h"
#include "muonplan/exec/safetensors.h"

namespace muonplan::exec {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace ckpt;

// Whether a rank-NNNNN.safetensors is one of ours: empty (a save killed between creating it
// and its first write, which holds the whole header), or a safetensors header whose
// __metadata__ "schema" starts with "muonplan.checkpoint/".
bool is_our_rank_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char len[8];
  in.read(reinterpret_cast<char*>(len), sizeof len);
  if (in.gcount() == 0) return true;
  if (in.gcount() != sizeof len) return false;
  const uint64_t n = safetensors::header_length(len);
  std::error_code ec;
  if (n > safetensors::kMaxHeaderBytes || n > fs::file_size(path, ec) - 8 || ec) return false;
  std::string text(n, '\0');
  in.read(text.data(), std::streamsize(n));
  const json h = json::parse(text, nullptr, false);
  if (!h.is_object() || !h.contains("__metadata__") || !h["__metadata__"].is_object()) return false;
  const json& m = h["__metadata__"];
  return m.contains("schema") && m["schema"].is_string() &&
         m["schema"].get<std::string>().rfind("muonplan.checkpoint/", 0) == 0;
}

// Whether a legacy rank-NNNNN.bin is ours: it starts with our magic, or is shorter than the
// magic (a save killed mid-write).
bool is_our_legacy_rank_file(const fs::path& path) {
  char magic[sizeof kLegacyMagic] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(magic, sizeof magic);
  return in.gcount() < std::streamsize(sizeof magic) ||
         std::memcmp(magic, kLegacyMagic, sizeof magic) == 0;
}

// Why `path` is not a checkpoint directory of ours, or "" when it is ours or absent. Ours: a
// directory holding only manifest.json (with our schema), manifest.json.part and rank files
// of ours (above; legacy ones too, so an old checkpoint can be replaced). Only such a directory
// is ever replaced or removed (docs/reliability.md).
std::string foreign_reason(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  if (ec || !fs::exists(st)) return "";
  if (fs::is_symlink(st)) return "is a symbolic link";
  if (!fs::is_directory(st)) return "is not a directory";
  fs::directory_iterator it(path, ec);
  if (ec) return "cannot be listed (" + ec.message() + ")";
  for (const fs::directory_entry& e : it) {
    const std::string name = e.path().filename().string();
    const fs::file_status st_e = e.symlink_status(ec);
    if (ec && !fs::exists(fs::symlink_status(e.path(), ec))) continue;  // gone since listed
    const bool regular = fs::is_regular_file(st_e);
    if (name == "manifest.json" && regular) {
      std::ifstream in(e.path());
      json m = json::parse(in, nullptr, false);
      if (m.is_object() && m.contains("schema") && m["schema"].is_string() &&
          m["schema"].get<std::string>().rfind("muonplan.checkpoint/", 0) == 0)
        continue;
      return "holds a manifest.json that is not a muonplan checkpoint's";
    }
    if (name == "manifest.json.part" && regular) continue;
    if (regular && is_rank_file_name(name, false) && is_our_rank_file(e.path())) continue;
    if (regular && is_rank_file_name(name, true) && is_our_legacy_rank_file(e.path())) continue;
    return "holds " + name + ", which is not part of a muonplan checkpoint";
  }
  return "";
}

}  // namespace

// Refuses, before anything is written or removed, a path among DIR, DIR.tmp and DIR.old that
// is not ours.
void ckpt::check_replaceable(const std::string& dir) {
  for (const std::string& d : {dir, dir + ".tmp", dir + ".old"}) {
    const std::string why = foreign_reason(d);
    if (!why.empty()) {
      throw InputError({d, 0, 0}, "--checkpoint",
                       why +
                           "; muonplan replaces only its own checkpoints: move it away or "
                           "checkpoint elsewhere");
    }
  }
}

namespace {

constexpr char kLockHeader[] = "muonplan checkpoint lock\n";

// Opens DIR.lock, creating it when absent; `created` says which.
int open_lock_file(const std::string& path, bool& created) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  created = fd >= 0;
  if (fd < 0 && errno == EEXIST) fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) sys_fail("cannot open the checkpoint lock", path);
  return fd;
}

// Whether `path` still names the file open as `fd`: a run that refused its target removes the
// lock file it created, and one that opened that file meanwhile must not keep a lock on it.
bool names_open_file(const std::string& path, int fd) {
  struct stat at_path {
  }, open{};
  return ::lstat(path.c_str(), &at_path) == 0 && ::fstat(fd, &open) == 0 &&
         at_path.st_dev == open.st_dev && at_path.st_ino == open.st_ino;
}

}  // namespace

CheckpointLock::CheckpointLock(const std::string& dir_arg) {
  const std::string dir = without_trailing_slash(dir_arg), path = dir + ".lock";
  auto refuse = [&](const std::string& why) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    throw InputError({path, 0, 0}, "--checkpoint", why);
  };
  // Before the lock file is made: a checkpoint inside another (ck/sub, from execute or Python's
  // write_checkpoint) would make every later save into the outer one refuse it as foreign.
  refuse_inside_checkpoint("--checkpoint", dir);
  bool created = false;
  for (int attempt = 0; fd_ < 0; ++attempt) {
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(path, ec);
    if (fs::exists(st) && !fs::is_regular_file(st))
      refuse("exists and is not a muonplan lock file");
    fd_ = open_lock_file(path, created);
    char text[256] = {};
    const ssize_t n = ::pread(fd_, text, sizeof text - 1, 0);
    const std::string content = n > 0 ? std::string(text, size_t(n)) : std::string();
    if (!content.empty() && content.rfind(kLockHeader, 0) != 0)
      refuse("exists and is not a muonplan lock file; move it away or checkpoint elsewhere");
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK) sys_fail("cannot lock", path);
      const size_t at = content.find("pid ");
      const std::string pid = at == std::string::npos
                                  ? "unknown"
                                  : content.substr(at + 4, content.find('\n', at) - at - 4);
      refuse("another run (pid " + pid + ") is writing this checkpoint; wait for it to finish");
    }
    if (!names_open_file(path, fd_)) {  // removed by a refused run after we opened it: again
      ::close(fd_);
      fd_ = -1;
      if (attempt == 100) refuse("keeps being replaced while it is locked");
    }
  }
  // The PID is written only once the target is ours: a refused run changes no file.
  try {
    check_replaceable(dir);
  } catch (const InputError&) {
    // Removed while still locked, so no other run holds it; one that opened it meanwhile
    // sees it gone (names_open_file) and starts over.
    if (created) ::unlink(path.c_str());
    ::close(fd_);
    fd_ = -1;
    throw;
  }
  const std::string mine = kLockHeader + std::string("pid ") + std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 ||
      ::pwrite(fd_, mine.data(), mine.size(), 0) != ssize_t(mine.size()))
    sys_fail("cannot write the checkpoint lock", path);
}

InputError load_error_while_saving(const std::string& dir_arg, const InputError& e) {
  const std::string path = without_trailing_slash(dir_arg) + ".lock";
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return e;
  struct stat st {};
  // A shared probe: it fails only while a saving run holds the lock exclusively. Closing this
  // descriptor drops the probe, never another descriptor's lock.
  const bool held = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                    ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  char text[256] = {};
  const ssize_t n = held ? ::pread(fd, text, sizeof text - 1, 0) : 0;
  ::close(fd);
  if (!held) return e;
  const std::string content = n > 0 ? std::string(text, size_t(n)) : std::string();
  const size_t at = content.rfind(kLockHeader, 0) == 0 ? content.find("pid ") : std::string::npos;
  const std::string who =
      at == std::string::npos
          ? "another process"
          : "another run (pid " + content.substr(at + 4, content.find('\n', at) - at - 4) + ")";
  return InputError({}, "--resume",
                    dir_arg + " could not be loaded while " + who + " holds " + path +
                        " and may be saving into it (" + e.what() +
                        "): resume once that run has saved; the checkpoint is damaged only if "
                        "this happens with no run holding the lock");
}

CheckpointLock::~CheckpointLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

}  // namespace muonplan::exec
