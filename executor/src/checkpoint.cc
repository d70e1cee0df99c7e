// Checkpoint files (docs/checkpoint-format.md). The manifest is written last, into DIR.tmp,
// and DIR.tmp only becomes DIR by a rename: a directory with a manifest is always complete.
#include "muonplan/exec/checkpoint.h"
#include "muonplan/exec/fnv1a.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "muonplan/error.h"
#include "muonplan/exec/digest.h"

namespace muonplan::exec {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
static_assert(std::endian::native == std::endian::little, "the format is little-endian");

constexpr const char* kSchema = "muonplan.checkpoint/2";
// Schema 1 manifests checksummed with an FNV offset basis one digit short (1469598103934665603,
// the standard one is 14695981039346656037); they are still verified with the basis they were
// written with (docs/checkpoint-format.md).
constexpr const char* kLegacySchema = "muonplan.checkpoint/1";
constexpr uint64_t kLegacyFnvBasis = 1469598103934665603ull;
constexpr char kMagic[8] = {'M', 'U', 'O', 'N', 'C', 'K', 'P', 'T'};
constexpr uint64_t kVersion = 1;
constexpr const char* kStepEntry = "step";  // the group's step count, as dion keeps it

size_t dtype_size(const std::string& dtype) {
  return dtype == "f32" ? 4 : dtype == "bf16" ? 2 : dtype == "i64" ? 8 : 0;
}

// "ckpt/" and "ckpt" name one checkpoint, whose siblings are ckpt.tmp and ckpt.old.
std::string without_trailing_slash(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

std::string rank_file(int rank) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "rank-%05d.bin", rank);
  return buf;
}

[[noreturn]] void sys_fail(const std::string& what, const std::string& path) {
  throw std::runtime_error(path + ": " + what + ": " + std::strerror(errno));
}

// The test hook of tests/mpi/checkpoint_kill.sh: every file-system operation of a save is a
// numbered save point (each write, fsync, close, mkdir, rename, remove, in order), and
// MUONPLAN_TEST_KILL_SAVE_AT=N raises SIGKILL just before rank 0's N-th ("R:N": rank R's;
// "list" prints every point instead), so the test can crash a save anywhere.
class SavePoints {
 public:
  explicit SavePoints(int rank) : rank_(rank) {
    const char* env = std::getenv("MUONPLAN_TEST_KILL_SAVE_AT");
    if (!env || !*env) return;
    if (std::strcmp(env, "list") == 0) {
      list_ = true;
      return;
    }
    int r = 0;
    long n = 0;
    if (std::sscanf(env, "%d:%ld", &r, &n) == 2) {
      if (r == rank) kill_at_ = n;
    } else if (rank == 0) {
      kill_at_ = std::atol(env);
    }
  }
  void at(const std::string& what) {
    ++count_;
    if (!list_ && count_ != kill_at_) return;
    const std::string line = "muonplan: rank " + std::to_string(rank_) + ": save point " +
                             std::to_string(count_) + ": " + what +
                             (list_ ? "\n" : " (test hook: SIGKILL)\n");
    ssize_t ignored = ::write(2, line.data(), line.size());
    (void)ignored;
    if (!list_) std::raise(SIGKILL);
  }

 private:
  int rank_;
  long count_ = 0, kill_at_ = -1;
  bool list_ = false;
};

void fsync_path(const std::string& path, bool directory, SavePoints& points) {
  points.at("fsync " + path);
  const int fd = ::open(path.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) sys_fail("cannot open to sync", path);
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) sys_fail("fsync failed", path);
}

void make_dir(const std::string& path, SavePoints& points) {
  points.at("mkdir " + path);
  fs::create_directories(path);
}

void rename_path(const std::string& from, const std::string& to, SavePoints& points) {
  points.at("rename " + from + " -> " + to);
  fs::rename(from, to);
}

void remove_path(const std::string& path, SavePoints& points) {
  if (!fs::exists(path)) return;
  points.at("remove " + path);
  fs::remove_all(path);
}

// Writes a file with write(2), checksumming every byte, in blocks: small pieces gather until
// end_block(); large data goes out in pieces of at most kBlock bytes. Each write is a save
// point, and `between` (the communicator's poll: liveness probes keep being answered during
// a long save) runs after it. close() fsyncs.
class Writer {
 public:
  static constexpr size_t kBlock = size_t(64) << 20;

  Writer(std::string path, SavePoints& points, std::function<void()> between)
      : path_(std::move(path)), points_(points), between_(std::move(between)) {
    points_.at("create " + path_);
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) sys_fail("cannot create", path_);
  }
  ~Writer() {
    if (fd_ >= 0) ::close(fd_);
  }
  void put(const void* data, size_t n) {
    sum_ = fnv1a64(data, n, sum_);
    bytes_ += n;
    const auto* p = static_cast<const char*>(data);
    if (buf_.size() + n <= kBlock) {
      buf_.insert(buf_.end(), p, p + n);
      return;
    }
    end_block(what_);
    for (size_t done = 0; done < n; done += kBlock) {
      write_out(p + done, std::min(kBlock, n - done), what_ + " at byte " + std::to_string(done));
    }
  }
  template <class T>
  void put_int(T v) {
    put(&v, sizeof v);
  }
  void put_string(const std::string& s) {
    put_int<uint32_t>(static_cast<uint32_t>(s.size()));
    put(s.data(), s.size());
  }
  // Names what the next block holds, for the save points.
  void begin_block(std::string what) { what_ = std::move(what); }
  void end_block(const std::string& what) {
    if (buf_.empty()) return;
    write_out(buf_.data(), buf_.size(), what);
    buf_.clear();
  }
  void close() {
    end_block(what_);
    points_.at("fsync " + path_);
    if (::fsync(fd_) != 0) sys_fail("fsync failed", path_);
    points_.at("close " + path_);
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) sys_fail("close failed", path_);
  }
  uint64_t bytes() const { return bytes_; }
  uint64_t checksum() const { return sum_; }

 private:
  void write_out(const char* p, size_t n, const std::string& what) {
    points_.at("write " + path_ + ": " + what);
    const off_t at = ::lseek(fd_, 0, SEEK_CUR);
    for (size_t done = 0; done < n;) {
      const ssize_t w = ::write(fd_, p + done, n - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) sys_fail("write failed", path_);
      done += size_t(w);
    }
    // Start writing back now, so the final fsync is short (peers wait for it).
    if (at >= 0 && n >= (size_t(1) << 20))
      ::sync_file_range(fd_, at, off_t(n), SYNC_FILE_RANGE_WRITE);
    if (between_) between_();
  }

  std::string path_;
  SavePoints& points_;
  std::function<void()> between_;
  int fd_ = -1;
  std::vector<char> buf_;
  std::string what_;
  uint64_t bytes_ = 0, sum_ = kFnv1a64Basis;
};

// Reads a rank file whose size the manifest vouches for; every length is checked against the
// bytes left, so a corrupt length cannot make it allocate or read past the end.
class Reader {
 public:
  Reader(std::string path, uint64_t size, uint64_t basis)
      : path_(std::move(path)), in_(path_, std::ios::binary), left_(size), sum_(basis) {
    if (!in_) throw InputError({path_, 0, 0}, "file", "cannot be read");
  }
  [[noreturn]] void corrupt(const std::string& what) const {
    throw InputError({path_, 0, 0}, "", "corrupt checkpoint file: " + what);
  }
  void get(void* data, uint64_t n) {
    if (n > left_) corrupt("a record runs past the end of the file");
    if (n && !in_.read(static_cast<char*>(data), std::streamsize(n))) corrupt("read failed");
    sum_ = fnv1a64(data, n, sum_);
    left_ -= n;
  }
  template <class T>
  T get_int() {
    T v;
    get(&v, sizeof v);
    return v;
  }
  std::string get_string() {
    std::string s(get_int<uint32_t>(), '\0');
    get(s.data(), s.size());
    return s;
  }
  uint64_t left() const { return left_; }
  uint64_t checksum() const { return sum_; }

 private:
  std::string path_;
  std::ifstream in_;
  uint64_t left_, sum_;
};

void check_entry(const CheckpointEntry& e) {
  const size_t size = dtype_size(e.dtype);
  if (e.name.empty() || e.name == kStepEntry || size == 0 || e.bytes.size() % size != 0) {
    throw std::invalid_argument("checkpoint entry '" + e.name + "' (" + e.dtype + ", " +
                                std::to_string(e.bytes.size()) +
                                " bytes): needs a name other than 'step' and whole f32 or bf16 "
                                "elements");
  }
}

struct Written {
  uint64_t bytes = 0, checksum = 0;
};

// Rank file: magic, version, entry count, then per entry name, dtype, byte count, bytes. One
// block (one write, one save point) for the header and the step, then one per entry.
Written write_rank_file(const std::string& path, int64_t step,
                        const std::vector<CheckpointEntry>& entries, SavePoints& points,
                        std::function<void()> between) {
  Writer w(path, points, std::move(between));
  w.begin_block("header and step");
  w.put(kMagic, sizeof kMagic);
  w.put_int<uint64_t>(kVersion);
  w.put_int<uint64_t>(entries.size() + 1);
  w.put_string(kStepEntry);
  w.put_string("i64");
  w.put_int<uint64_t>(8);
  w.put_int<int64_t>(step);
  w.end_block("header and step");
  for (const CheckpointEntry& e : entries) {
    w.begin_block("entry " + e.name);
    w.put_string(e.name);
    w.put_string(e.dtype);
    w.put_int<uint64_t>(e.bytes.size());
    w.put(e.bytes.data(), e.bytes.size());
    w.end_block("entry " + e.name);
  }
  w.close();
  return {w.bytes(), w.checksum()};
}

bool is_rank_file_name(const std::string& n) {
  if (n.size() < 10 || n.rfind("rank-", 0) != 0 || n.substr(n.size() - 4) != ".bin") return false;
  return std::all_of(n.begin() + 5, n.end() - 4, [](char c) { return c >= '0' && c <= '9'; });
}

// Why `path` is not a checkpoint directory of ours, or "" when it is ours or absent. Ours: a
// directory holding only manifest.json (with our schema), manifest.json.part and rank files
// that start with our magic (a file shorter than the magic is a save killed mid-write). Only
// such a directory is ever replaced or removed (docs/reliability.md).
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
    const bool regular = fs::is_regular_file(e.symlink_status(ec));
    if (name == "manifest.json" && regular) {
      std::ifstream in(e.path());
      json m = json::parse(in, nullptr, false);
      if (m.is_object() && m.contains("schema") && m["schema"].is_string() &&
          m["schema"].get<std::string>().rfind("muonplan.checkpoint/", 0) == 0)
        continue;
      return "holds a manifest.json that is not a muonplan checkpoint's";
    }
    if (name == "manifest.json.part" && regular) continue;
    if (is_rank_file_name(name) && regular) {
      char magic[sizeof kMagic] = {};
      std::ifstream in(e.path(), std::ios::binary);
      in.read(magic, sizeof magic);
      if (in.gcount() < std::streamsize(sizeof magic) ||
          std::memcmp(magic, kMagic, sizeof magic) == 0)
        continue;
    }
    return "holds " + name + ", which is not part of a muonplan checkpoint";
  }
  return "";
}

// Refuses, before anything is written or removed, a path among DIR, DIR.tmp and DIR.old that
// is not ours.
void check_replaceable(const std::string& dir) {
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

// Finishes or undoes a save that crashed between its renames, so DIR is the newest complete
// checkpoint (if any), then clears the leftovers. Rank 0 only.
void recover(const std::string& dir, SavePoints& points) {
  check_replaceable(dir);  // again at save time: the directory may have changed since the start
  const std::string tmp = dir + ".tmp", old = dir + ".old";
  if (!fs::exists(dir + "/manifest.json")) {
    if (fs::exists(tmp + "/manifest.json")) {
      remove_path(dir, points);
      rename_path(tmp, dir, points);
    } else if (fs::exists(old + "/manifest.json")) {
      remove_path(dir, points);
      rename_path(old, dir, points);
    }
  }
  remove_path(tmp, points);
  remove_path(old, points);
}

// Rank 0, after every rank file is on disk: the manifest (written aside and renamed, so a
// manifest.json is always whole), then the renames.
void publish(const std::string& dir, int world, int64_t step, const std::string& fingerprint,
             const std::vector<uint64_t>& sizes, const std::vector<uint64_t>& sums,
             SavePoints& points) {
  const std::string tmp = dir + ".tmp", old = dir + ".old";
  json ranks = json::array();
  for (int r = 0; r < world; ++r) {
    ranks.push_back(
        {{"file", rank_file(r)}, {"bytes", sizes[r]}, {"checksum", digest_hex(sums[r])}});
  }
  const json manifest = {{"schema", kSchema},      {"step", step},
                         {"world_size", world},    {"plan_fingerprint", fingerprint},
                         {"checksum", "fnv1a-64"}, {"ranks", ranks}};
  const std::string text = manifest.dump(2) + "\n";
  Writer w(tmp + "/manifest.json.part", points, nullptr);
  w.begin_block("manifest");
  w.put(text.data(), text.size());
  w.close();
  rename_path(tmp + "/manifest.json.part", tmp + "/manifest.json", points);
  fsync_path(tmp, true, points);
  if (fs::exists(dir)) rename_path(dir, old, points);
  rename_path(tmp, dir, points);
  fsync_path(fs::absolute(dir).parent_path().string(), true, points);
  remove_path(old, points);
}

// Runs `phase` on the ranks `mine` says, then agrees on success: if any rank failed, every rank
// throws (the failing one with its own message), so no rank waits forever for another.
template <class F>
void agreed(Communicator* comm, const std::string& dir, const std::string& phase, bool mine,
            F&& body) {
  std::string error;
  if (mine) {
    try {
      body();
    } catch (const RankFailure&) {
      throw;  // a peer is gone: no agreement to reach
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  uint64_t failed = error.empty() ? 0 : 1;
  if (comm) comm->allreduce_sum_u64(&failed, 1);
  if (!error.empty()) throw std::runtime_error("checkpoint " + dir + ": " + error);
  if (failed) {
    throw std::runtime_error("checkpoint " + dir + ": " + phase + " failed on " +
                             std::to_string(failed) + " other rank(s)");
  }
}

}  // namespace

void check_checkpoint_target(const std::string& dir) {
  check_replaceable(without_trailing_slash(dir));
}

CheckpointLock::CheckpointLock(const std::string& dir_arg) {
  const std::string path = without_trailing_slash(dir_arg) + ".lock";
  static constexpr char kHeader[] = "muonplan checkpoint lock\n";
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  if (fs::exists(st) && !fs::is_regular_file(st))
    throw InputError({path, 0, 0}, "--checkpoint", "exists and is not a muonplan lock file");
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0) sys_fail("cannot open the checkpoint lock", path);
  auto refuse = [&](const std::string& why) {
    ::close(fd_);
    fd_ = -1;
    throw InputError({path, 0, 0}, "--checkpoint", why);
  };
  char text[256] = {};
  const ssize_t n = ::pread(fd_, text, sizeof text - 1, 0);
  const std::string content = n > 0 ? std::string(text, size_t(n)) : std::string();
  if (!content.empty() && content.rfind(kHeader, 0) != 0)
    refuse("exists and is not a muonplan lock file; move it away or checkpoint elsewhere");
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) sys_fail("cannot lock", path);
    const size_t at = content.find("pid ");
    const std::string pid = at == std::string::npos
                                ? "unknown"
                                : content.substr(at + 4, content.find('\n', at) - at - 4);
    refuse("another run (pid " + pid + ") is writing this checkpoint; wait for it to finish");
  }
  const std::string mine = kHeader + std::string("pid ") + std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 ||
      ::pwrite(fd_, mine.data(), mine.size(), 0) != ssize_t(mine.size()))
    sys_fail("cannot write the checkpoint lock", path);
}

CheckpointLock::~CheckpointLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

void save_checkpoint(const std::string& dir_arg, int rank, int world, int64_t step,
                     const std::string& fingerprint, const std::vector<CheckpointEntry>& entries,
                     Communicator* comm) {
  if (!comm && (world != 1 || rank != 0))
    throw std::invalid_argument("save_checkpoint: without a communicator the world must be 1");
  const std::string dir = without_trailing_slash(dir_arg);
  const std::string tmp = dir + ".tmp";
  SavePoints points(rank);
  std::function<void()> poll;
  if (comm) poll = [comm] { comm->poll(); };
  // Entries are checked inside a phase: a bad entry on one rank must fail every rank, not
  // leave the others waiting in the next collective.
  agreed(comm, dir, "checking entries or preparing " + tmp, true, [&] {
    for (const CheckpointEntry& e : entries) check_entry(e);
    if (rank != 0) return;
    recover(dir, points);
    make_dir(tmp, points);
  });
  // Each rank's size and checksum in its own slot: a sum over ranks gathers them.
  std::vector<uint64_t> info(2 * world, 0);
  agreed(comm, dir, "writing rank files", true, [&] {
    const Written w = write_rank_file(tmp + "/" + rank_file(rank), step, entries, points, poll);
    info[rank] = w.bytes;
    info[world + rank] = w.checksum;
  });
  if (comm) comm->allreduce_sum_u64(info.data(), info.size());
  agreed(comm, dir, "publishing the manifest", rank == 0, [&] {
    publish(dir, world, step, fingerprint, {info.begin(), info.begin() + world},
            {info.begin() + world, info.end()}, points);
  });
}

LoadedCheckpoint load_checkpoint(const std::string& dir_arg, int rank, int world,
                                 const std::string& fingerprint) {
  const std::string dir = without_trailing_slash(dir_arg);
  std::string base = dir;
  for (const std::string& d : {dir, dir + ".tmp", dir + ".old"}) {
    if (fs::exists(d + "/manifest.json")) {
      base = d;
      break;
    }
  }
  const std::string mpath = base + "/manifest.json";
  std::ifstream in(mpath);
  if (!in) throw InputError({mpath, 0, 0}, "file", "cannot be read");
  json m;
  try {
    m = json::parse(in);
  } catch (const json::exception& e) {
    throw InputError({mpath, 0, 0}, "json", e.what());
  }
  auto field = [&](const char* key) -> const json& {
    if (!m.is_object() || !m.contains(key)) throw InputError({mpath, 0, 0}, key, "missing");
    return m[key];
  };
  const bool legacy = field("schema") == kLegacySchema;
  if (field("schema") != kSchema && !legacy) {
    throw InputError({mpath, 0, 0}, "schema",
                     std::string("expected ") + kSchema + ", got " + field("schema").dump());
  }
  LoadedCheckpoint out;
  try {
    if (field("world_size").get<int>() != world) {
      throw InputError({mpath, 0, 0}, "world_size",
                       "the checkpoint was written by " + field("world_size").dump() +
                           " ranks; this run has " + std::to_string(world));
    }
    if (field("plan_fingerprint").get<std::string>() != fingerprint) {
      throw InputError({mpath, 0, 0}, "plan_fingerprint",
                       "the checkpoint is for plan " + field("plan_fingerprint").dump() +
                           ", this run's plan is \"" + fingerprint + "\"");
    }
    out.step = field("step").get<int64_t>();
    // Only the checksum save writes, and only files inside the checkpoint: "../x.bin" or an
    // absolute path would read (and trust) a file elsewhere.
    if (field("checksum") != "fnv1a-64") {
      throw InputError({mpath, 0, 0}, "checksum",
                       "expected \"fnv1a-64\", got " + field("checksum").dump());
    }
    const json& r = field("ranks").at(rank);
    if (r.at("file") != rank_file(rank)) {
      throw InputError({mpath, 0, 0}, "ranks[" + std::to_string(rank) + "].file",
                       "expected \"" + rank_file(rank) + "\", got " + r.at("file").dump());
    }
    const std::string path = base + "/" + r.at("file").get<std::string>();
    const uint64_t size = r.at("bytes").get<uint64_t>();
    const std::string sum = r.at("checksum").get<std::string>();
    std::error_code ec;
    const uint64_t actual = fs::file_size(path, ec);
    if (ec) throw InputError({path, 0, 0}, "file", "cannot be read");
    if (actual != size) {
      throw InputError({path, 0, 0}, "",
                       "truncated or extended: " + std::to_string(actual) +
                           " bytes, the manifest says " + std::to_string(size));
    }
    Reader rd(path, size, legacy ? kLegacyFnvBasis : kFnv1a64Basis);
    char magic[sizeof kMagic];
    rd.get(magic, sizeof magic);
    if (std::memcmp(magic, kMagic, sizeof magic) != 0 || rd.get_int<uint64_t>() != kVersion)
      rd.corrupt("not a muonplan checkpoint file of version 1");
    const uint64_t count = rd.get_int<uint64_t>();
    for (uint64_t i = 0; i < count; ++i) {
      CheckpointEntry e;
      e.name = rd.get_string();
      e.dtype = rd.get_string();
      const uint64_t n = rd.get_int<uint64_t>();
      if (dtype_size(e.dtype) == 0 || n % dtype_size(e.dtype) != 0 || n > rd.left())
        rd.corrupt("entry '" + e.name + "' has a bad dtype or length");
      e.bytes.resize(n);
      rd.get(e.bytes.data(), n);
      if (e.name != kStepEntry) {
        out.entries.push_back(std::move(e));
      } else if (n != 8 || std::memcmp(e.bytes.data(), &out.step, 8) != 0) {
        rd.corrupt("its step differs from the manifest's");
      }
    }
    if (rd.left() != 0) rd.corrupt("trailing bytes after the last entry");
    if (digest_hex(rd.checksum()) != sum) {
      throw InputError({path, 0, 0}, "",
                       "checksum mismatch: fnv1a-64 " + digest_hex(rd.checksum()) +
                           ", the manifest says " + sum);
    }
  } catch (const json::exception& e) {
    throw InputError({mpath, 0, 0}, "", std::string("malformed manifest: ") + e.what());
  }
  return out;
}

}  // namespace muonplan::exec
