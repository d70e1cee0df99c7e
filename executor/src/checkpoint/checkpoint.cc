// Saving checkpoints (docs/checkpoint-format.md). The manifest is written last, into DIR.tmp,
// and DIR.tmp only becomes DIR by a rename: a directory with a manifest is always complete.
#include "muonplan/exec/checkpoint.h"

#include "muonplan/exec/checkpoint_entries.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "checkpoint/checkpoint_files.h"
#include "muonplan/base/error.h"
#include "muonplan/exec/agreed_error.h"
#include "muonplan/exec/digest.h"
#include "muonplan/exec/fnv1a.h"
#include "muonplan/exec/plan_shards.h"
#include "muonplan/exec/safetensors.h"

namespace muonplan::exec {
namespace ckpt {

std::string without_trailing_slash(std::string dir) {
  // An empty path is no directory: a save would write ".tmp" and ".lock" into the working one.
  if (dir.empty()) throw InputError({}, "checkpoint directory", "an empty path; give a path");
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

std::string rank_file(int rank, bool legacy) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "rank-%05d.%s", rank, legacy ? "bin" : "safetensors");
  return buf;
}

bool is_rank_file_name(const std::string& n, bool legacy) {
  const std::string ext = legacy ? ".bin" : ".safetensors";
  if (n.size() < 6 + ext.size() || n.rfind("rank-", 0) != 0 ||
      n.compare(n.size() - ext.size(), ext.size(), ext) != 0)
    return false;
  return std::all_of(n.begin() + 5, n.end() - ext.size(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

int64_t row_elems(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

std::pair<std::string, std::string> split_entry_name(const std::string& name) {
  const size_t slash = name.rfind('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == name.size()) return {"", ""};
  return {name.substr(0, slash), name.substr(slash + 1)};
}

[[noreturn]] void sys_fail(const std::string& what, const std::string& path) {
  throw std::runtime_error(path + ": " + what + ": " + std::strerror(errno));
}

}  // namespace ckpt

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace ckpt;

// The test hooks of tests/mpi/checkpoint_kill.sh and checkpoint_safety.sh: every file-system
// operation of a save is a numbered save point (each write, fsync, close, mkdir, rename,
// remove, in order). MUONPLAN_TEST_KILL_SAVE_AT=N raises SIGKILL just before rank 0's N-th
// ("R:N": rank R's; "list" prints every point instead), so a test can crash a save anywhere;
// MUONPLAN_TEST_STOP_SAVE_AT=N (or R:N) raises SIGSTOP there instead, so a test can start a
// second run while the first is stopped at a point it names, then send SIGCONT.
class SavePoints {
 public:
  explicit SavePoints(int rank) : rank_(rank) {
    kill_at_ = point_of("MUONPLAN_TEST_KILL_SAVE_AT", &list_);
    stop_at_ = point_of("MUONPLAN_TEST_STOP_SAVE_AT", nullptr);
  }
  void at(const std::string& what) {
    ++count_;
    const bool kill = count_ == kill_at_, stop = count_ == stop_at_;
    if (!list_ && !kill && !stop) return;
    const std::string line = "muonplan: rank " + std::to_string(rank_) + ": save point " +
                             std::to_string(count_) + ": " + what +
                             (kill   ? " (test hook: SIGKILL)\n"
                              : stop ? " (test hook: SIGSTOP)\n"
                                     : "\n");
    ssize_t ignored = ::write(2, line.data(), line.size());
    (void)ignored;
    if (kill || stop) std::raise(kill ? SIGKILL : SIGSTOP);
  }

 private:
  // This rank's point of the hook `name` (N: rank 0's, R:N: rank R's), or -1; `list` sets *list.
  long point_of(const char* name, bool* list) const {
    const char* env = std::getenv(name);
    if (!env || !*env) return -1;
    if (list != nullptr && std::strcmp(env, "list") == 0) {
      *list = true;
      return -1;
    }
    int r = 0;
    long n = 0;
    if (std::sscanf(env, "%d:%ld", &r, &n) == 2) return r == rank_ ? n : -1;
    return rank_ == 0 ? std::atol(env) : -1;
  }

  int rank_;
  long count_ = 0, kill_at_ = -1, stop_at_ = -1;
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

struct Written {
  uint64_t bytes = 0, checksum = 0;
};

const char* st_dtype(const std::string& dtype) {
  return checkpoint_dtype(dtype)->safetensors;  // check_entries has checked it
}

// A rank's entries against the model: each names a tensor of `info` and one of its state
// fields, holds rows inside the tensor (all of one tensor's fields the same rows, since the
// metadata records one range per tensor) and exactly that many elements of its dtype.
void check_entries(const CheckpointPlanInfo& info, const std::vector<CheckpointEntry>& entries) {
  std::map<std::string, const CheckpointTensor*> tensors;
  for (const CheckpointTensor& t : info.tensors) tensors[t.name] = &t;
  std::map<std::string, std::pair<int64_t, int64_t>> rows;
  std::set<std::string> seen;
  for (const CheckpointEntry& e : entries) {
    const auto [tensor, field] = split_entry_name(e.name);
    const auto it = tensors.find(tensor);
    const CheckpointField* kind = checkpoint_field(field);
    const std::string what = "checkpoint entry '" + e.name + "' (" + e.dtype + ", rows " +
                             std::to_string(e.begin) + ".." + std::to_string(e.end) + ", " +
                             std::to_string(e.bytes.size()) + " bytes): ";
    if (it == tensors.end() || !kind)
      throw std::invalid_argument(what + "not <tensor>" + checkpoint_fields_text() +
                                  " of a tensor of the model");
    if (!seen.insert(e.name).second) throw std::invalid_argument(what + "given twice");
    const CheckpointTensor& t = *it->second;
    const CheckpointDtype* dtype = checkpoint_dtype(e.dtype);
    const size_t size = dtype && dtype_allowed(*kind, *dtype) ? dtype->bytes : 0;
    if (size == 0) throw std::invalid_argument(what + "f32 needed (bf16 only for momentum)");
    if (e.begin < 0 || e.begin >= e.end || e.end > t.shape[0])
      throw std::invalid_argument(what + "rows outside the tensor, or none");
    if (e.bytes.size() != size_t((e.end - e.begin) * row_elems(t.shape)) * size)
      throw std::invalid_argument(what + "the byte count does not match the rows");
    const auto [r, fresh] = rows.emplace(tensor, std::make_pair(e.begin, e.end));
    if (!fresh && r->second != std::make_pair(e.begin, e.end))
      throw std::invalid_argument(what + "other rows than another entry of its tensor");
  }
}

// "[b,e]": metadata values are strings (the format says so); these parse as JSON.
std::string range_text(int64_t b, int64_t e) {
  return "[" + std::to_string(b) + "," + std::to_string(e) + "]";
}

// A safetensors file: the header (tensor table and __metadata__) and the `step` entry in one
// block (one write, one save point), then one block per entry, in order.
Written write_rank_file(const std::string& path, int rank, int world, int64_t step,
                        const CheckpointPlanInfo& info, const std::vector<CheckpointEntry>& entries,
                        SavePoints& points, std::function<void()> between) {
  std::map<std::string, const CheckpointTensor*> tensors;
  for (const CheckpointTensor& t : info.tensors) tensors[t.name] = &t;
  std::vector<safetensors::Tensor> table = {{kStepEntry, "I64", {}, 0, 0}};
  std::map<std::string, std::string> meta = {{"schema", kSchema},
                                             {"step", std::to_string(step)},
                                             {"rank", std::to_string(rank)},
                                             {"world_size", std::to_string(world)}};
  for (const CheckpointEntry& e : entries) {
    const std::string tensor = split_entry_name(e.name).first;
    const CheckpointTensor& t = *tensors.at(tensor);
    std::vector<int64_t> shape = t.shape;
    shape[0] = e.end - e.begin;
    table.push_back({e.name, st_dtype(e.dtype), shape, 0, 0});
    meta[tensor + "/shape"] = json(t.shape).dump();
    meta[tensor + (t.stack ? "/experts" : "/rows")] = range_text(e.begin, e.end);
  }
  const std::string header = safetensors::encode_header(table, meta);
  Writer w(path, points, std::move(between));
  w.begin_block("header and step");
  w.put(header.data(), header.size());
  w.put(&step, sizeof step);
  w.end_block("header and step");
  for (const CheckpointEntry& e : entries) {
    w.begin_block("entry " + e.name);
    w.put(e.bytes.data(), e.bytes.size());
    w.end_block("entry " + e.name);
  }
  w.close();
  return {w.bytes(), w.checksum()};
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

// The manifest text: one key per line, and one line per tensor and per rank file, so that it
// stays readable for models of thousands of tensors.
std::string manifest_text(int world, int64_t step, const CheckpointPlanInfo& info,
                          const std::vector<uint64_t>& sizes, const std::vector<uint64_t>& sums) {
  using ojson = nlohmann::ordered_json;
  auto lines = [](const std::vector<ojson>& items) {
    std::string out = "[";
    for (size_t i = 0; i < items.size(); ++i) out += (i ? ",\n    " : "\n    ") + items[i].dump();
    return out + (items.empty() ? "]" : "\n  ]");
  };
  std::vector<ojson> tensors, ranks;
  for (const CheckpointTensor& t : info.tensors) {
    tensors.push_back({{"name", t.name}, {"shape", t.shape}, {"rule", t.rule}, {"stack", t.stack}});
  }
  for (int r = 0; r < world; ++r) {
    ranks.push_back(
        {{"file", rank_file(r)}, {"bytes", sizes[r]}, {"checksum", digest_hex(sums[r])}});
  }
  const ojson head = {{"schema", kSchema},
                      {"step", step},
                      {"world_size", world},
                      {"plan_fingerprint", info.fingerprint},
                      {"layout", info.layout},
                      {"offload", info.offload},
                      {"bf16_momentum", info.bf16_momentum},
                      {"checksum", "fnv1a-64"}};
  std::string text = "{\n";
  for (const auto& [k, v] : head.items()) text += "  " + ojson(k).dump() + ": " + v.dump() + ",\n";
  text += "  \"tensors\": " + lines(tensors) + ",\n";
  text += "  \"ranks\": " + lines(ranks) + "\n}\n";
  return text;
}

// Rank 0, after every rank file is on disk: the manifest (written aside and renamed, so a
// manifest.json is always whole), then the renames.
void publish(const std::string& dir, int world, int64_t step, const CheckpointPlanInfo& info,
             const std::vector<uint64_t>& sizes, const std::vector<uint64_t>& sums,
             SavePoints& points) {
  const std::string tmp = dir + ".tmp", old = dir + ".old";
  const std::string text = manifest_text(world, step, info, sizes, sums);
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

// After a failed save: removes DIR.tmp, whose partial files would hold a full disk's space and
// make the next save clean up first, unless it holds a manifest (complete: recover() and a
// resume take it).
void discard_partial(const std::string& tmp) noexcept {
  std::error_code ec;
  if (!fs::exists(tmp + "/manifest.json", ec)) fs::remove_all(tmp, ec);
}

// Runs `phase` on the ranks `mine` says, then agrees on success: if any rank failed, every rank
// throws (the failing one with its own message), so no rank waits forever for another.
template <class F>
void agreed(Communicator* comm, const std::string& dir, const std::string& phase, bool mine,
            F&& body) {
  RankError error;
  if (mine) {
    try {
      body();
    } catch (const RankFailure&) {
      throw;  // a peer is gone: no agreement to reach
    } catch (const std::exception& e) {
      error = {"checkpoint " + dir + ": " + e.what(), false};
    }
  }
  const AgreedErrors agreed = agree_on_errors(comm, error);
  error.rethrow_if_failed();
  if (agreed.count > 0) {
    throw std::runtime_error("checkpoint " + dir + ": " + phase + " failed on " +
                             std::to_string(agreed.count) + " other rank(s)");
  }
}

}  // namespace

void save_checkpoint(const std::string& dir_arg, int rank, int world, int64_t step,
                     const CheckpointPlanInfo& plan, const std::vector<CheckpointEntry>& entries,
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
    check_entries(plan, entries);
    if (rank != 0) return;
    recover(dir, points);
    make_dir(tmp, points);
  });
  // Each rank's size and checksum in its own slot: a sum over ranks gathers them.
  std::vector<uint64_t> info(2 * world, 0);
  try {
    agreed(comm, dir, "writing rank files", true, [&] {
      const Written w = write_rank_file(tmp + "/" + rank_file(rank), rank, world, step, plan,
                                        entries, points, poll);
      info[rank] = w.bytes;
      info[world + rank] = w.checksum;
    });
    if (comm) comm->allreduce_sum_u64(info.data(), info.size());
    agreed(comm, dir, "publishing the manifest", rank == 0, [&] {
      publish(dir, world, step, plan, {info.begin(), info.begin() + world},
              {info.begin() + world, info.end()}, points);
    });
  } catch (...) {
    // Every rank has left the phase that failed (agreed), so no one writes into DIR.tmp now.
    if (rank == 0) discard_partial(tmp);
    throw;
  }
}

void save_checkpoint_all(const std::string& dir_arg, int64_t step, const CheckpointPlanInfo& plan,
                         const std::vector<std::vector<CheckpointEntry>>& per_rank) {
  const std::string dir = without_trailing_slash(dir_arg);
  const int world = static_cast<int>(per_rank.size());
  if (world < 1) throw std::invalid_argument("save_checkpoint_all: no ranks");
  CheckpointLock lock(dir);  // checks the target under the lock
  for (const auto& entries : per_rank) check_entries(plan, entries);
  SavePoints points(0);
  recover(dir, points);
  make_dir(dir + ".tmp", points);
  std::vector<uint64_t> sizes, sums;
  try {
    for (int r = 0; r < world; ++r) {
      const Written w = write_rank_file(dir + ".tmp/" + rank_file(r), r, world, step, plan,
                                        per_rank[size_t(r)], points, nullptr);
      sizes.push_back(w.bytes);
      sums.push_back(w.checksum);
    }
    publish(dir, world, step, plan, sizes, sums, points);
  } catch (...) {
    discard_partial(dir + ".tmp");
    throw;
  }
}

CheckpointPlanInfo checkpoint_plan_info(const Plan& plan) {
  CheckpointPlanInfo info;
  info.fingerprint = plan_fingerprint(plan);
  info.layout = to_string(plan.options.layout);
  info.offload = to_string(plan.options.offload);
  info.bf16_momentum = plan.options.bf16_momentum;
  for (const ParamTensor& t : plan.inventory.tensors)
    info.tensors.push_back({t.name, t.shape, to_string(t.rule), t.stack_dim == 0});
  return info;
}

}  // namespace muonplan::exec
