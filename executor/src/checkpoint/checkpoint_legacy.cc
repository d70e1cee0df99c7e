// Loading schema 1 and 2 checkpoints (rank-NNNNN.bin, our own format; docs/checkpoint-format.md,
// "Older checkpoints"). Their rank files record no placements, so they load only into the plan
// that wrote them: same world size, same plan fingerprint. Nothing writes this format now.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint_files.h"
#include "muonplan/base/error.h"
#include "muonplan/base/regular_file.h"
#include "muonplan/exec/checkpoint.h"
#include "muonplan/exec/digest.h"
#include "muonplan/exec/fnv1a.h"

namespace muonplan::exec {
namespace {

using namespace ckpt;
constexpr uint64_t kVersion = 1;

size_t dtype_size(const std::string& dtype) {
  return dtype == "f32" ? 4 : dtype == "bf16" ? 2 : dtype == "i64" ? 8 : 0;
}

// Reads a rank file whose size the manifest vouches for; every length is checked against the
// bytes left, so a corrupt length cannot make it allocate or read past the end.
class Reader {
 public:
  Reader(std::string path, uint64_t size, uint64_t basis)
      : path_(std::move(path)), left_(size), sum_(basis) {
    check_regular_input(path_);  // before the open: a FIFO there would block it
    in_.open(path_, std::ios::binary);
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

}  // namespace

std::vector<CheckpointEntry> load_legacy_rank_file(const CheckpointManifest& m, int rank, int world,
                                                   const std::string& fingerprint) {
  if (m.world != world) {
    throw InputError({m.path, 0, 0}, "world_size",
                     "the checkpoint was written by " + std::to_string(m.world) +
                         " ranks; this run has " + std::to_string(world) +
                         " (checkpoints of schema 1 and 2 load only into the plan that wrote "
                         "them)");
  }
  if (m.info.fingerprint != fingerprint) {
    throw InputError({m.path, 0, 0}, "plan_fingerprint",
                     "the checkpoint is for plan \"" + m.info.fingerprint +
                         "\", this run's plan is \"" + fingerprint +
                         "\" (checkpoints of schema 1 and 2 load only into the plan that wrote "
                         "them)");
  }
  const CheckpointFile& f = m.files.at(static_cast<size_t>(rank));
  const std::string path = m.dir + "/" + f.name;
  std::error_code ec;
  const uint64_t actual = std::filesystem::file_size(path, ec);
  if (ec) throw InputError({path, 0, 0}, "file", "cannot be read");
  if (actual != f.bytes) {
    throw InputError({path, 0, 0}, "",
                     "truncated or extended: " + std::to_string(actual) +
                         " bytes, the manifest says " + std::to_string(f.bytes));
  }
  Reader rd(path, f.bytes, m.fnv_basis);
  char magic[sizeof kLegacyMagic];
  rd.get(magic, sizeof magic);
  if (std::memcmp(magic, kLegacyMagic, sizeof magic) != 0 || rd.get_int<uint64_t>() != kVersion)
    rd.corrupt("not a muonplan checkpoint file of version 1");
  std::vector<CheckpointEntry> out;
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
      out.push_back(std::move(e));
    } else if (n != 8 || std::memcmp(e.bytes.data(), &m.step, 8) != 0) {
      rd.corrupt("its step differs from the manifest's");
    }
  }
  if (rd.left() != 0) rd.corrupt("trailing bytes after the last entry");
  if (digest_hex(rd.checksum()) != f.checksum) {
    throw InputError({path, 0, 0}, "",
                     "checksum mismatch: fnv1a-64 " + digest_hex(rd.checksum()) +
                         ", the manifest says " + f.checksum);
  }
  return out;
}

}  // namespace muonplan::exec
