// Reading inputs and writing outputs (io.h). POSIX calls rather than streams: a stream neither
// refuses a FIFO before it blocks nor reports the errno of a failed write or close.
#include "muonplan/base/io.h"
#include "muonplan/base/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include "muonplan/base/error.h"
#include "muonplan/base/json_bounds.h"

namespace muonplan {
namespace {

using json = nlohmann::json;

// Closes on scope exit (for paths that throw); release() hands the descriptor back.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Why a file of this mode is not an input; nullptr for a regular file.
const char* not_regular(mode_t mode) {
  if (S_ISREG(mode)) return nullptr;
  if (S_ISDIR(mode)) return "is a directory, not a file";
  if (S_ISFIFO(mode)) return "is a FIFO, not a regular file";
  if (S_ISCHR(mode)) return "is a character device, not a regular file";
  if (S_ISBLK(mode)) return "is a block device, not a regular file";
  if (S_ISSOCK(mode)) return "is a socket, not a regular file";
  return "is not a regular file";
}

std::string too_large(int64_t max_bytes) {
  if (max_bytes < kMaxInputFileBytes) {
    return "is larger than " + std::to_string(max_bytes) + " bytes, more than it can hold";
  }
  return "is larger than " + std::to_string(kMaxInputFileBytes >> 20) +
         " MiB, more than any muonplan input";
}

// At most `most` characters of `text`, each byte outside printable ASCII (and, in_quotes, the quote
// around it) as \xNN.
std::string escaped_brief(const std::string& text, size_t most, bool in_quotes) {
  std::string out;
  char hex[8];
  for (const char ch : text) {
    const auto b = static_cast<unsigned char>(ch);
    if (b >= 0x20 && b < 0x7F && !(in_quotes && b == '\'')) {
      out += ch;
    } else {
      std::snprintf(hex, sizeof hex, "\\x%02X", unsigned(b));
      out += hex;
    }
    if (out.size() >= most) return out.substr(0, most) + "...";
  }
  return out;
}

[[noreturn]] void write_failed(const std::string& path, int err) {
  throw std::runtime_error("cannot write " + path + ": " + std::strerror(err));
}

// Writes all of data to fd; the errno of the first failure, 0 on success.
int write_all(int fd, const std::string& data) {
  for (size_t done = 0; done < data.size();) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    done += static_cast<size_t>(n);
  }
  return 0;
}

// A device, FIFO or symbolic link: written where it is. O_NONBLOCK so that a FIFO without a
// reader fails (ENXIO) instead of blocking; cleared for the writes themselves.
void write_in_place(const std::string& path, const std::string& data) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0666));
  if (fd.get() < 0) write_failed(path, errno);
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
  struct stat st = {};
  int err = write_all(fd.get(), data);
  // Only a regular file behind a link needs its data on disk; devices may not support fsync.
  if (!err && ::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) && ::fsync(fd.get()) != 0)
    err = errno;
  if (::close(fd.release()) != 0 && !err) err = errno;
  if (err) write_failed(path, err);
}

}  // namespace

json parse_json_text(const std::string& text, const std::string& path) {
  check_json_bounds(text, path);  // json_bounds.h: before nlohmann recurses or allocates
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    // e.byte is the 1-based offset where parsing stopped.
    const SourceLoc loc = text_location(text, e.byte > 0 ? e.byte - 1 : 0, path);
    throw InputError(loc, "json", json_error_text(e.what()));
  } catch (const json::exception& e) {
    // A number too large for a double ("1e400") is an out_of_range, without an offset.
    const std::string what = e.what();  // "[json.exception.out_of_range.406] number ..."
    throw InputError({path, 0, 0}, "json", what.substr(what.find("] ") + 2));
  }
}

std::string json_error_text(const std::string& what) {
  const size_t colon = what.find(": ");  // drop "[json.exception...] parse error at ...: "
  std::string m = colon == std::string::npos ? what : what.substr(colon + 2);
  const std::string tag = "; last read: '";
  const size_t at = m.find(tag);
  if (at == std::string::npos) return escaped_brief(m, 200, false);
  std::string token = m.substr(at + tag.size());
  if (!token.empty() && token.back() == '\'') token.pop_back();
  return escaped_brief(m.substr(0, at), 160, false) + tag + escaped_brief(token, 40, true) + "'";
}

std::string json_brief(const json& v) {
  // A short list of numbers or words is shown as written ([512,512]); other containers by size.
  const bool short_flat =
      v.is_array() && v.size() <= 8 && std::all_of(v.begin(), v.end(), [](const json& e) {
        return e.is_primitive() && !(e.is_string() && e.get_ref<const std::string&>().size() > 20);
      });
  if (short_flat) return v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (v.is_object()) return "an object of " + std::to_string(v.size()) + " keys";
  if (v.is_array()) return "an array of " + std::to_string(v.size()) + " values";
  if (v.is_string() && v.get_ref<const std::string&>().size() > 60) {
    return json(v.get_ref<const std::string&>().substr(0, 57) + "...")
        .dump(-1, ' ', false, json::error_handler_t::replace);
  }
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string read_input_file(const std::string& path, const std::string& field, int64_t max_bytes) {
  max_bytes = std::min(max_bytes, kMaxInputFileBytes);
  auto fail = [&](const std::string& message) -> void {
    throw InputError({path, 0, 0}, field, message);
  };
  auto unreadable = [&](int err) {
    fail(err == ENOENT ? "cannot be read" : std::string("cannot be read: ") + std::strerror(err));
  };
  // stat first: opening a FIFO blocks until a writer comes, and a device may do things on open.
  struct stat st = {};
  if (::stat(path.c_str(), &st) != 0) unreadable(errno);
  if (const char* why = not_regular(st.st_mode)) fail(why);
  if (st.st_size > max_bytes) fail(too_large(max_bytes));
  // The path may have changed since: O_NONBLOCK keeps a FIFO put there from blocking the open,
  // and fstat checks what was opened.
  Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) unreadable(errno);
  if (::fstat(fd.get(), &st) != 0) unreadable(errno);
  if (const char* why = not_regular(st.st_mode)) fail(why);
  // Read to the end rather than st_size bytes (a file may grow, /proc files report 0), but
  // never past the limit.
  std::string text;
  char buf[1 << 16];
  for (;;) {
    // One byte past the limit at most, enough to tell the file is larger.
    const size_t want = size_t(std::min<int64_t>(sizeof buf, max_bytes + 1 - int64_t(text.size())));
    const ssize_t n = ::read(fd.get(), buf, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) unreadable(errno);
    if (n == 0) break;
    if (static_cast<int64_t>(text.size()) + n > max_bytes) fail(too_large(max_bytes));
    text.append(buf, static_cast<size_t>(n));
  }
  return text;
}

void check_regular_input(const std::string& path, const std::string& field) {
  struct stat st = {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    throw InputError(
        {path, 0, 0}, field,
        err == ENOENT ? "cannot be read" : std::string("cannot be read: ") + std::strerror(err));
  }
  if (const char* why = not_regular(st.st_mode)) throw InputError({path, 0, 0}, field, why);
}

json read_json_file(const std::string& path, const std::string& field) {
  const std::string text = read_input_file(path, field);
  json j = parse_json_text(text, path);
  refuse_duplicate_keys(text, path);  // our formats only (json_bounds.h): JSON keeps the last
  return j;
}

void write_file_atomic(const std::string& path, const std::string& data) {
  struct stat st = {};
  const bool exists = ::lstat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) write_failed(path, EISDIR);
  if (exists && !S_ISREG(st.st_mode)) return write_in_place(path, data);
  const std::filesystem::path target(path);
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : ".";
  const std::string tmp =
      (dir / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()))).string();
  ::unlink(tmp.c_str());  // a leftover of a killed run with this pid
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
  if (fd.get() < 0) write_failed(path, errno);
  int err = write_all(fd.get(), data);
  // A replaced file keeps its permissions, as when it was truncated and rewritten.
  if (!err && exists && ::fchmod(fd.get(), st.st_mode & 07777) != 0) err = errno;
  if (!err && ::fsync(fd.get()) != 0) err = errno;
  if (::close(fd.release()) != 0 && !err) err = errno;
  if (!err && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err) {
    ::unlink(tmp.c_str());
    write_failed(path, err);
  }
  // The rename on disk too; a directory that cannot be synced has already done what it can.
  Fd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() >= 0) ::fsync(dir_fd.get());
}

}  // namespace muonplan
