// Checkpoints: round trip with dtypes kept, atomic replacement, and refusal (one line naming
// the file) of truncated, corrupt and mismatched checkpoints. Single process: comm = nullptr.
#include <unistd.h>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "muonplan/error.h"
#include "muonplan/exec/checkpoint.h"

using namespace muonplan;
using namespace muonplan::exec;
namespace fs = std::filesystem;

namespace {

CheckpointEntry entry(const std::string& name, const std::string& dtype, size_t bytes, int seed) {
  CheckpointEntry e{name, dtype, std::vector<uint8_t>(bytes)};
  for (size_t i = 0; i < bytes; ++i) e.bytes[i] = uint8_t(i * 7 + seed);
  return e;
}

std::vector<CheckpointEntry> state() {
  // b/variance last: the damage tests below flip bytes counted from the end.
  return {entry("empty/param", "f32", 0, 6),      entry("w/param", "f32", 4 * 30, 1),
          entry("w/momentum", "bf16", 2 * 30, 2), entry("b/param", "f32", 4 * 5, 3),
          entry("b/momentum", "f32", 4 * 5, 4),   entry("b/variance", "f32", 4 * 5, 5)};
}

bool same(const std::vector<CheckpointEntry>& a, const std::vector<CheckpointEntry>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].dtype != b[i].dtype || a[i].bytes != b[i].bytes)
      return false;
  }
  return true;
}

// A fresh directory per test case, removed afterwards with its .tmp and .old siblings.
struct TempCheckpoint {
  std::string dir;
  TempCheckpoint() {
    static int n = 0;
    dir = (fs::temp_directory_path() /
           ("muonplan_ckpt_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++)))
              .string();
  }
  ~TempCheckpoint() {
    for (const char* s : {"", ".tmp", ".old"}) fs::remove_all(dir + s);
  }
  std::string rank0() const { return dir + "/rank-00000.bin"; }
};

std::string load_error(const std::string& dir, int world = 1, const std::string& fp = "fp") {
  try {
    load_checkpoint(dir, 0, world, fp);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(loaded)";
}

void flip_byte(const std::string& path, long offset_from_end) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(offset_from_end, std::ios::end);
  const char c = char(f.get() ^ 0x10);
  f.seekp(offset_from_end, std::ios::end);
  f.put(c);
}

}  // namespace

TEST_CASE("checkpoint: round trip keeps names, dtypes and bytes", "[exec-infra]") {
  TempCheckpoint t;
  save_checkpoint(t.dir + "/", 0, 1, 7, "fp", state(), nullptr);  // a trailing slash is fine
  const LoadedCheckpoint ck = load_checkpoint(t.dir, 0, 1, "fp");
  CHECK(ck.step == 7);
  CHECK(same(ck.entries, state()));
  CHECK(ck.entries[2].dtype == "bf16");  // bf16 momentum stays bf16
  CHECK(fs::exists(t.dir + "/manifest.json"));
  CHECK_FALSE(fs::exists(t.dir + ".tmp"));

  // Saving again replaces it whole, leaving no siblings behind.
  std::vector<CheckpointEntry> next = state();
  next[1].bytes[3] ^= 0xff;
  save_checkpoint(t.dir, 0, 1, 8, "fp", next, nullptr);
  const LoadedCheckpoint ck2 = load_checkpoint(t.dir, 0, 1, "fp");
  CHECK(ck2.step == 8);
  CHECK(same(ck2.entries, next));
  CHECK_FALSE(fs::exists(t.dir + ".tmp"));
  CHECK_FALSE(fs::exists(t.dir + ".old"));
}

TEST_CASE("checkpoint: an entry larger than one write block round-trips", "[exec-infra]") {
  // Entries over 64 MiB are written in 64 MiB pieces (one save point each).
  TempCheckpoint t;
  std::vector<CheckpointEntry> big = state();
  big.insert(big.begin() + 1, entry("huge/param", "f32", (size_t(65) << 20) + 4, 9));
  save_checkpoint(t.dir, 0, 1, 3, "fp", big, nullptr);
  const LoadedCheckpoint ck = load_checkpoint(t.dir, 0, 1, "fp");
  CHECK(same(ck.entries, big));
}

TEST_CASE("checkpoint: damaged files are refused naming the file", "[exec-infra]") {
  TempCheckpoint t;
  save_checkpoint(t.dir, 0, 1, 7, "fp", state(), nullptr);
  const std::string bin = t.rank0();
  const auto size = fs::file_size(bin);

  SECTION("truncated") {
    fs::resize_file(bin, size - 3);
    CHECK(load_error(t.dir) == bin + ": truncated or extended: " + std::to_string(size - 3) +
                                   " bytes, the manifest says " + std::to_string(size));
  }
  SECTION("a flipped byte in the data") {
    flip_byte(bin, -5);
    CHECK(load_error(t.dir).rfind(bin + ": checksum mismatch: fnv1a-64 ", 0) == 0);
  }
  SECTION("a flipped byte in a length") {
    flip_byte(bin, -(4 * 5 + 3));  // a high byte of b/variance's byte count
    CHECK(load_error(t.dir).rfind(bin + ": corrupt checkpoint file: ", 0) == 0);
  }
  SECTION("a missing rank file") {
    fs::remove(bin);
    CHECK(load_error(t.dir) == bin + ": file: cannot be read");
  }
  SECTION("no checkpoint at all") {
    CHECK(load_error(t.dir + "-none") == t.dir + "-none/manifest.json: file: cannot be read");
  }
}

TEST_CASE("checkpoint: world size and plan mismatches are refused", "[exec-infra]") {
  TempCheckpoint t;
  save_checkpoint(t.dir, 0, 1, 7, "fp", state(), nullptr);
  const std::string manifest = t.dir + "/manifest.json";
  CHECK(load_error(t.dir, 2) == manifest +
                                    ": world_size: the checkpoint was written by 1 ranks; this "
                                    "run has 2");
  CHECK(load_error(t.dir, 1, "other") ==
        manifest +
            ": plan_fingerprint: the checkpoint is for plan \"fp\", this run's plan is "
            "\"other\"");
  std::ofstream(manifest) << R"({"schema": "muonplan.checkpoint/9"})";
  CHECK(load_error(t.dir) ==
        manifest + ": schema: expected muonplan.checkpoint/2, got \"muonplan.checkpoint/9\"");
}

TEST_CASE("checkpoint: a manifest naming a file elsewhere or another checksum is refused",
          "[exec-infra]") {
  // Both used to be read as given: "../x.bin" was opened outside the checkpoint, and an unknown
  // checksum algorithm was checked as FNV-1a 64 anyway.
  TempCheckpoint t;
  save_checkpoint(t.dir, 0, 1, 7, "fp", state(), nullptr);
  const std::string manifest = t.dir + "/manifest.json";
  std::ifstream in(manifest);
  const nlohmann::json good = nlohmann::json::parse(in);
  in.close();
  auto error_with = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json m = good;
    edit(m);
    std::ofstream(manifest) << m.dump();
    return load_error(t.dir);
  };
  fs::copy_file(t.rank0(), t.dir + "-outside.bin");
  CHECK(error_with([&](nlohmann::json& m) {
          m["ranks"][0]["file"] = "../" + fs::path(t.dir).filename().string() + "-outside.bin";
        }) == manifest + ": ranks[0].file: expected \"rank-00000.bin\", got \"../" +
                  fs::path(t.dir).filename().string() + "-outside.bin\"");
  fs::remove(t.dir + "-outside.bin");
  CHECK(error_with([](nlohmann::json& m) { m["ranks"][0]["file"] = "rank-00001.bin"; }) ==
        manifest + ": ranks[0].file: expected \"rank-00000.bin\", got \"rank-00001.bin\"");
  CHECK(error_with([](nlohmann::json& m) { m["checksum"] = "md5"; }) ==
        manifest + ": checksum: expected \"fnv1a-64\", got \"md5\"");
  CHECK(error_with([](nlohmann::json&) {}) == "(loaded)");
}

TEST_CASE("checkpoint: a crash at any point leaves one loadable", "[exec-infra]") {
  TempCheckpoint t;
  save_checkpoint(t.dir, 0, 1, 7, "fp", state(), nullptr);
  SECTION("during the rank files: the old one loads, the next save cleans up") {
    fs::create_directory(t.dir + ".tmp");
    std::ofstream(t.dir + ".tmp/rank-00000.bin") << "partial";
    CHECK(load_checkpoint(t.dir, 0, 1, "fp").step == 7);
    save_checkpoint(t.dir, 0, 1, 8, "fp", state(), nullptr);
    CHECK(load_checkpoint(t.dir, 0, 1, "fp").step == 8);
  }
  SECTION("between the renames: the new one loads from DIR.tmp") {
    save_checkpoint(t.dir + "-new", 0, 1, 8, "fp", state(), nullptr);
    fs::rename(t.dir, t.dir + ".old");
    fs::rename(t.dir + "-new", t.dir + ".tmp");
    CHECK(load_checkpoint(t.dir, 0, 1, "fp").step == 8);
    save_checkpoint(t.dir, 0, 1, 9, "fp", state(), nullptr);  // recovers, then saves
    CHECK(load_checkpoint(t.dir, 0, 1, "fp").step == 9);
    CHECK_FALSE(fs::exists(t.dir + ".old"));
  }
  SECTION("after the first rename, before the manifest of the new one: DIR.old loads") {
    fs::rename(t.dir, t.dir + ".old");
    CHECK(load_checkpoint(t.dir, 0, 1, "fp").step == 7);
  }
}

TEST_CASE("checkpoint: bad arguments are refused before anything is written", "[exec-infra]") {
  TempCheckpoint t;
  CHECK_THROWS_AS(save_checkpoint(t.dir, 0, 2, 1, "fp", state(), nullptr), std::invalid_argument);
  std::vector<CheckpointEntry> bad = state();
  bad.push_back(entry("step", "f32", 4, 0));  // the group's step is the checkpoint's own
  CHECK_THROWS_WITH(save_checkpoint(t.dir, 0, 1, 1, "fp", bad, nullptr),
                    Catch::Contains("entry 'step' (f32, 4 bytes): needs a name other than"));
  bad.back() = entry("odd", "bf16", 3, 0);
  CHECK_THROWS_WITH(save_checkpoint(t.dir, 0, 1, 1, "fp", bad, nullptr),
                    Catch::Contains("entry 'odd' (bf16, 3 bytes)"));
  CHECK_FALSE(fs::exists(t.dir));
  CHECK_FALSE(fs::exists(t.dir + ".tmp"));
}
