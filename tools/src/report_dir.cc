// The report's directory (report_dir.h).
#include "muonplan/tools/report_dir.h"

#include <unistd.h>

#include <filesystem>
#include <stdexcept>

#include "muonplan/base/error.h"
#include "muonplan/base/io.h"
#include "muonplan/base/paths.h"

namespace muonplan {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void refuse(const DirOwner& owner, const std::string& dir, const std::string& why) {
  throw InputError({}, owner.flag,
                   dir + " " + why + "; muonplan writes " + owner.what +
                       " only into a new or empty directory, or one it wrote: give another " +
                       owner.flag);
}

// Refuses DIR when it must not be replaced.
void check_target(const DirOwner& owner, const std::string& dir) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(dir, ec);
  if (!fs::exists(st)) return;
  if (fs::is_symlink(st)) refuse(owner, dir, "is a symbolic link");
  if (!fs::is_directory(st)) refuse(owner, dir, "exists and is not a directory");
  if (holds_checkpoint(dir)) refuse(owner, dir, "is a muonplan checkpoint directory");
  const bool ours = fs::is_regular_file(fs::symlink_status(fs::path(dir) / owner.marker, ec));
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!ours) refuse(owner, dir, "holds files muonplan did not write (" + name + ")");
    if (!fs::is_regular_file(e.symlink_status(ec)))
      refuse(owner, dir, "holds " + name + ", which is not a regular file");
  }
  if (ec) refuse(owner, dir, "cannot be listed (" + ec.message() + ")");
}

fs::path beside(const fs::path& dir, const std::string& what) {
  return dir.parent_path() /
         ("." + dir.filename().string() + "." + what + "." + std::to_string(::getpid()));
}

}  // namespace

ReportDir::ReportDir(const std::string& dir_arg, const DirOwner& owner) : owner_(owner) {
  fs::path dir = fs::path(dir_arg).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();  // "out/" names out
  if (dir_arg.empty()) throw InputError({}, owner.flag, "an empty path; give a directory");
  if (dir.empty() || dir == "." || dir == "..") refuse(owner, dir_arg, "is a working directory");
  // The same by another spelling (`--out "$PWD"`): the new directory is renamed into place, so
  // the shell would be left in the removed one.
  std::error_code cwd_ec;
  if (fs::equivalent(dir, fs::current_path(cwd_ec), cwd_ec) && !cwd_ec)
    refuse(owner, dir_arg, "is the working directory");
  dir_ = dir.string();
  // Resolved, dangling links followed: `rep -> ck/rep` would put the report inside ck.
  refuse_inside_checkpoint(owner.flag, dir_);
  check_target(owner, dir_);
  std::error_code ec;
  if (dir.has_parent_path()) fs::create_directories(dir.parent_path(), ec);
  if (ec)
    throw std::runtime_error("cannot create " + dir.parent_path().string() + ": " + ec.message());
  staging_ = beside(dir, "report").string();
  fs::remove_all(staging_, ec);  // a leftover of a killed run with this pid
  if (!fs::create_directory(staging_, ec))
    throw std::runtime_error("cannot create " + staging_ + ": " + ec.message());
  try {
    write_file_atomic((fs::path(staging_) / owner.marker).string(),
                      std::string("written by muonplan: ") + owner.what +
                          "; a later one may replace this directory\n");
  } catch (...) {
    fs::remove_all(staging_, ec);
    throw;
  }
}

ReportDir::~ReportDir() {
  std::error_code ec;
  if (!published_) fs::remove_all(staging_, ec);
}

void ReportDir::publish() {
  check_target(owner_, dir_);  // again: DIR may have changed while the report was drawn
  std::error_code ec;
  const fs::path old = beside(dir_, "old");
  const bool exists = fs::exists(fs::symlink_status(dir_, ec));
  if (exists) {
    fs::remove_all(old, ec);
    fs::rename(dir_, old, ec);
    if (ec) throw std::runtime_error("cannot replace " + dir_ + ": " + ec.message());
  }
  fs::rename(staging_, dir_, ec);
  if (ec) {
    std::error_code back;
    if (exists) fs::rename(old, dir_, back);  // DIR as it was
    throw std::runtime_error("cannot replace " + dir_ + ": " + ec.message());
  }
  published_ = true;
  fs::remove_all(old, ec);
}

}  // namespace muonplan
