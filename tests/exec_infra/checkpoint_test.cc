// Checkpoints: round trip with dtypes kept, shards gathered into another placement, fp32 to
// bf16 momentum, atomic replacement, refusal (one line naming the file, the entry or the
// tensor) of truncated, corrupt and mismatched checkpoints, and schema-2 checkpoints still
// loading. Single process: comm = nullptr, or save_checkpoint_all for several ranks' files.
#include <unistd.h>
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "muonplan/base/error.h"
#include "muonplan/exec/bf16.h"
#include "muonplan/exec/checkpoint.h"
#include "muonplan/exec/checkpoint_entries.h"
#include "muonplan/exec/digest.h"
#include "muonplan/exec/fnv1a.h"
#include "muonplan/exec/safetensors.h"

using namespace muonplan;
using namespace muonplan::exec;
namespace fs = std::filesystem;

namespace {

// A model of three tensors: a Muon matrix, an AdamW vector, an expert stack.
CheckpointPlanInfo model() {
  CheckpointPlanInfo info;
  info.fingerprint = "fp";
  info.layout = "fsdp=1,cp=1,ep=1";
  info.offload = "none";
  info.tensors = {
      {"w", {6, 5}, "muon", false}, {"b", {5}, "adamw", false}, {"e", {4, 3, 2}, "muon", true}};
  return info;
}

// Element k of a whole tensor's field, as fp32: distinct everywhere, exact in bf16 for none.
float value(const std::string& name, int64_t k) {
  return float(fnv1a64(name) % 1000) + 0.001f * float(k) + 1.0f / 3.0f;
}

// Rows [begin, end) of an entry of model(), `row` elements each.
CheckpointEntry entry(const std::string& name, const std::string& dtype, int64_t begin, int64_t end,
                      int64_t row) {
  CheckpointEntry e{name, dtype, begin, end, {}};
  for (int64_t k = begin * row; k < end * row; ++k) {
    const float f = value(name, k);
    if (dtype == "bf16") {
      const bf16 h = to_bf16(f);
      e.bytes.insert(e.bytes.end(), reinterpret_cast<const uint8_t*>(&h.bits),
                     reinterpret_cast<const uint8_t*>(&h.bits) + 2);
    } else {
      e.bytes.insert(e.bytes.end(), reinterpret_cast<const uint8_t*>(&f),
                     reinterpret_cast<const uint8_t*>(&f) + 4);
    }
  }
  return e;
}

// Every entry of model() for rows of w [w0, w1), b [b0, b1), experts [e0, e1); an empty range
// leaves the tensor out, as a rank that holds none of its rows does.
std::vector<CheckpointEntry> shard(int64_t w0, int64_t w1, int64_t b0, int64_t b1, int64_t e0,
                                   int64_t e1, const std::string& w_momentum = "f32") {
  std::vector<CheckpointEntry> out;
  if (w0 < w1) {
    out.push_back(entry("w/param", "f32", w0, w1, 5));
    out.push_back(entry("w/momentum", w_momentum, w0, w1, 5));
  }
  if (b0 < b1) {
    for (const char* f : {"b/param", "b/momentum", "b/variance"})
      out.push_back(entry(f, "f32", b0, b1, 1));
  }
  if (e0 < e1) {
    out.push_back(entry("e/param", "f32", e0, e1, 6));
    out.push_back(entry("e/momentum", "f32", e0, e1, 6));
  }
  return out;
}

std::vector<ShardRequest> requests(int64_t w0, int64_t w1, const std::string& w_momentum = "f32") {
  return {{"w/param", "f32", w0, w1}, {"w/momentum", w_momentum, w0, w1}};
}

// A fresh directory per test case, removed afterwards with its siblings.
struct TempCheckpoint {
  std::string dir;
  TempCheckpoint() {
    static int n = 0;
    dir = (fs::temp_directory_path() /
           ("muonplan_ckpt_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++)))
              .string();
  }
  ~TempCheckpoint() {
    for (const char* s : {"", ".tmp", ".old", ".lock", "-new", "-new.lock"})
      fs::remove_all(dir + s);
  }
  std::string file(int r) const {
    char buf[40];
    std::snprintf(buf, sizeof buf, "/rank-%05d.safetensors", r);
    return dir + buf;
  }
};

std::vector<CheckpointEntry> load(const std::string& dir, const std::vector<ShardRequest>& wants,
                                  int rank = 0, int world = 1) {
  const CheckpointManifest m = read_manifest(dir);
  check_same_model(m, model());
  return load_shards(m, rank, world, wants);
}

std::string load_error(const std::string& dir, const std::vector<ShardRequest>& wants, int rank = 0,
                       int world = 1) {
  try {
    load(dir, wants, rank, world);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(loaded)";
}

void flip_byte(const std::string& path, long offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(offset, offset < 0 ? std::ios::end : std::ios::beg);
  const char c = char(f.get() ^ 0x10);
  f.seekp(offset, offset < 0 ? std::ios::end : std::ios::beg);
  f.put(c);
}

bool same_bytes(const CheckpointEntry& a, const CheckpointEntry& b) {
  return a.name == b.name && a.dtype == b.dtype && a.begin == b.begin && a.end == b.end &&
         a.bytes == b.bytes;
}

}  // namespace

TEST_CASE("safetensors: header round trip and the format's checks", "[exec-infra]") {
  std::vector<safetensors::Tensor> t = {
      {"step", "I64", {}, 0, 0}, {"a", "BF16", {3}, 0, 0}, {"b", "F32", {2, 2}, 0, 0}};
  const std::string h = safetensors::encode_header(t, {{"k", "v"}});
  CHECK(h.size() % 8 == 0);
  const uint64_t n = safetensors::header_length(reinterpret_cast<const unsigned char*>(h.data()));
  CHECK(n == h.size() - 8);
  CHECK(t[1].begin == 8);
  CHECK(t[2].begin == 14);
  CHECK(t[2].end == 30);
  const safetensors::Header d = safetensors::decode_header(h.substr(8), 30);
  REQUIRE(d.tensors.size() == 3);
  CHECK(d.tensors[2].name == "b");
  CHECK(d.tensors[2].shape == std::vector<int64_t>{2, 2});
  CHECK(d.metadata.at("k") == "v");
  CHECK(d.data_start == h.size());
  auto error = [](const std::string& json, uint64_t data) {
    try {
      safetensors::decode_header(json, data);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  CHECK(error(h.substr(8), 31) == "the data has bytes no tensor covers");
  CHECK(error(R"({"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}})", 2) ==
        "tensor 'a': dtype \"F16\" is not F32, BF16 or I64");
  CHECK(error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4) ==
        "tensor 'a': data_offsets do not match dtype and shape");
  CHECK(error(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
              R"("b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}})",
              6) == "tensor 'b': data overlaps another or leaves a gap");
  CHECK(error(R"({"__metadata__":{"n":1}})", 0) == "__metadata__ value of 'n' is not a string");
  CHECK(error(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
              R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
              4)
            .find("given twice") != std::string::npos);
}

TEST_CASE("checkpoint: round trip keeps dtypes, bytes and placements", "[exec-infra]") {
  TempCheckpoint t;
  save_checkpoint(t.dir + "/", 0, 1, 7, model(), shard(0, 6, 0, 5, 0, 4, "bf16"), nullptr);
  CHECK(fs::exists(t.dir + "/manifest.json"));
  CHECK_FALSE(fs::exists(t.dir + ".tmp"));
  const CheckpointManifest m = read_manifest(t.dir);
  CHECK(m.step == 7);
  CHECK_FALSE(m.legacy);
  const auto got = load(t.dir, requests(0, 6, "bf16"));
  const auto want = shard(0, 6, 0, 5, 0, 4, "bf16");
  CHECK(same_bytes(got[0], want[0]));
  CHECK(same_bytes(got[1], want[1]));  // bf16 momentum stays bf16

  // The rank file is safetensors with our metadata.
  std::ifstream in(t.file(0), std::ios::binary);
  unsigned char len[8];
  in.read(reinterpret_cast<char*>(len), 8);
  std::string text(safetensors::header_length(len), '\0');
  in.read(text.data(), std::streamsize(text.size()));
  const auto h = safetensors::decode_header(text, fs::file_size(t.file(0)) - 8 - text.size());
  CHECK(h.metadata.at("schema") == "muonplan.checkpoint/3");
  CHECK(h.metadata.at("step") == "7");
  CHECK(h.metadata.at("world_size") == "1");
  CHECK(h.metadata.at("w/rows") == "[0,6]");
  CHECK(h.metadata.at("e/experts") == "[0,4]");
  CHECK(h.metadata.at("e/shape") == "[4,3,2]");

  // Saving again replaces it whole, leaving no siblings behind.
  save_checkpoint(t.dir, 0, 1, 8, model(), shard(0, 6, 0, 5, 0, 4), nullptr);
  CHECK(read_manifest(t.dir).step == 8);
  CHECK_FALSE(fs::exists(t.dir + ".tmp"));
  CHECK_FALSE(fs::exists(t.dir + ".old"));
}

TEST_CASE("checkpoint: shards gather from the files that hold their rows", "[exec-infra]") {
  TempCheckpoint t;
  // Three ranks: w rows 0-2 / 2-4 / 4-6, b only on rank 0 (replicated), experts 0-1 / 1-3 / 3-4.
  save_checkpoint_all(t.dir, 3, model(),
                      {shard(0, 2, 0, 5, 0, 1), shard(2, 4, 0, 0, 1, 3), shard(4, 6, 0, 0, 3, 4)});
  // Two ranks: rows 0-3 and 3-6 of w, all of b on both, experts 0-2 and 2-4.
  for (int r = 0; r < 2; ++r) {
    std::vector<ShardRequest> wants = requests(3 * r, 3 * r + 3);
    for (const char* f : {"b/param", "b/momentum", "b/variance"}) wants.push_back({f, "f32", 0, 5});
    wants.push_back({"e/momentum", "f32", 2 * r, 2 * r + 2});
    const auto got = load(t.dir, wants, r, 2);
    const auto want = shard(3 * r, 3 * r + 3, 0, 5, 2 * r, 2 * r + 2);
    REQUIRE(got.size() == 6);
    for (size_t k = 0; k < 5; ++k) CHECK(same_bytes(got[k], want[k]));
    CHECK(same_bytes(got[5], want[6]));  // e/momentum
  }
  // fp32 momentum asked for as bf16: rounded to nearest even.
  const auto bf = load(t.dir, requests(1, 5, "bf16"));
  CHECK(same_bytes(bf[1], entry("w/momentum", "bf16", 1, 5, 5)));
  // A request for rows a file does not hold of a tensor it holds: named with the row.
  TempCheckpoint partial;
  save_checkpoint_all(partial.dir, 3, model(), {shard(0, 2, 0, 5, 0, 4), shard(4, 6, 0, 0, 0, 0)});
  CHECK(load_error(partial.dir, requests(0, 6)) ==
        partial.dir +
            "/manifest.json: w/param: row 2 is in no rank file (the checkpoint lacks "
            "state this plan needs)");
}

TEST_CASE("checkpoint: every file is verified by some rank, needed or not", "[exec-infra]") {
  TempCheckpoint t;
  save_checkpoint_all(t.dir, 3, model(),
                      {shard(0, 2, 0, 5, 0, 1), shard(2, 4, 0, 0, 1, 3), shard(4, 6, 0, 0, 3, 4)});
  flip_byte(t.file(2), -3);  // in e/momentum of rank 2's file
  // Rank 0 of 2 wants rows of file 0 only, and verifies files 0 and 2 (i % 2 == 0).
  CHECK(load_error(t.dir, requests(0, 2), 0, 2).rfind(t.file(2) + ": checksum mismatch", 0) == 0);
  // Rank 1 of 2 wants rows of file 1 and verifies file 1: file 2 is rank 0's to check.
  CHECK(load_error(t.dir, requests(2, 4), 1, 2) == "(loaded)");
}

TEST_CASE("checkpoint: bf16 momentum is not widened to fp32", "[exec-infra]") {
  TempCheckpoint t;
  save_checkpoint(t.dir, 0, 1, 7, model(), shard(0, 6, 0, 5, 0, 4, "bf16"), nullptr);
  CHECK(load_error(t.dir, requests(0, 6)) ==
        t.file(0) +
            ": w/momentum: bf16 in the checkpoint, fp32 in this plan; widening cannot restore "
            "the bits bf16 dropped: resume it with --bf16-momentum");
}

TEST_CASE("checkpoint: another model is refused naming the first tensor that differs",
          "[exec-infra]") {
  TempCheckpoint t;
  save_checkpoint(t.dir, 0, 1, 7, model(), shard(0, 6, 0, 5, 0, 4), nullptr);
  const CheckpointManifest m = read_manifest(t.dir);
  auto error = [&](const std::function<void(CheckpointPlanInfo&)>& edit) {
    CheckpointPlanInfo other = model();
    edit(other);
    try {
      check_same_model(m, other);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(same)");
  };
  const std::string head = t.dir + "/manifest.json: tensors: the checkpoint is of another model: ";
  const std::string tail = " (a checkpoint loads into plans of the same tensors and shapes)";
  CHECK(error([](CheckpointPlanInfo&) {}) == "(same)");
  // Layout, offload, momentum dtype and fingerprint do not matter.
  CHECK(error([](CheckpointPlanInfo& p) {
          p.fingerprint = "x";
          p.layout = "fsdp=2";
          p.bf16_momentum = true;
        }) == "(same)");
  CHECK(error([](CheckpointPlanInfo& p) { p.tensors[1].shape = {7}; }) ==
        head + "b has shape [5] there, [7] here" + tail);
  CHECK(error([](CheckpointPlanInfo& p) { p.tensors[0].name = "v"; }) ==
        head + "v is not in it" + tail);
  CHECK(error([](CheckpointPlanInfo& p) { p.tensors.pop_back(); }) ==
        head + "e is in it but not in this plan's model" + tail);
  CHECK(error([](CheckpointPlanInfo& p) { p.tensors[0].rule = "adamw"; }) ==
        head + "w is updated by muon there, by adamw here" + tail);
}

TEST_CASE("checkpoint: damaged files are refused naming the file", "[exec-infra]") {
  TempCheckpoint t;
  save_checkpoint(t.dir, 0, 1, 7, model(), shard(0, 6, 0, 5, 0, 4), nullptr);
  const std::string f = t.file(0);
  const auto size = fs::file_size(f);

  SECTION("truncated") {
    fs::resize_file(f, size - 3);
    CHECK(load_error(t.dir, requests(0, 6)) ==
          f + ": truncated or extended: " + std::to_string(size - 3) +
              " bytes, the manifest says " + std::to_string(size));
  }
  SECTION("a flipped byte in the data") {
    flip_byte(f, -5);
    CHECK(load_error(t.dir, requests(0, 6)).rfind(f + ": checksum mismatch: fnv1a-64 ", 0) == 0);
  }
  SECTION("a flipped byte in the header length") {
    flip_byte(f, 5);
    CHECK(load_error(t.dir, requests(0, 6)).rfind(f + ": corrupt checkpoint file: ", 0) == 0);
  }
  SECTION("a missing rank file") {
    fs::remove(f);
    CHECK(load_error(t.dir, requests(0, 6)) == f + ": file: cannot be read");
  }
  SECTION("no checkpoint at all") {
    const std::string none = t.dir + "-none";
    CHECK(load_error(none, requests(0, 6)) == none +
                                                  ": no checkpoint there (no such directory, nor " +
                                                  none + ".tmp or " + none + ".old)");
  }
}

TEST_CASE("checkpoint: a manifest naming a file elsewhere, another checksum or schema is refused",
          "[exec-infra]") {
  TempCheckpoint t;
  save_checkpoint(t.dir, 0, 1, 7, model(), shard(0, 6, 0, 5, 0, 4), nullptr);
  const std::string manifest = t.dir + "/manifest.json";
  std::ifstream in(manifest);
  const nlohmann::json good = nlohmann::json::parse(in);
  in.close();
  auto error_with = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json m = good;
    edit(m);
    std::ofstream(manifest) << m.dump();
    return load_error(t.dir, requests(0, 6));
  };
  CHECK(error_with([&](nlohmann::json& m) { m["ranks"][0]["file"] = "../x.safetensors"; }) ==
        manifest +
            ": ranks[0].file: expected \"rank-00000.safetensors\", got \"../x.safetensors\"");
  CHECK(error_with([](nlohmann::json& m) { m["checksum"] = "md5"; }) ==
        manifest + ": checksum: expected \"fnv1a-64\", got \"md5\"");
  CHECK(error_with([](nlohmann::json& m) { m["schema"] = "muonplan.checkpoint/9"; }) ==
        manifest +
            ": schema: expected muonplan.checkpoint/3 (or the older muonplan.checkpoint/2, "
            "muonplan.checkpoint/1), got \"muonplan.checkpoint/9\"");
  CHECK(error_with([](nlohmann::json& m) { m["step"] = 8; }) ==
        t.file(0) +
            ": corrupt checkpoint file: __metadata__ step is \"7\", the manifest says \"8\"");
  CHECK(error_with([](nlohmann::json&) {}) == "(loaded)");
}

TEST_CASE("checkpoint: a crash at any point leaves one loadable", "[exec-infra]") {
  TempCheckpoint t;
  save_checkpoint(t.dir, 0, 1, 7, model(), shard(0, 6, 0, 5, 0, 4), nullptr);
  SECTION("during the rank files: the old one loads, the next save cleans up") {
    fs::create_directory(t.dir + ".tmp");
    std::ofstream(t.dir + ".tmp/rank-00000.safetensors");  // created, nothing written yet
    CHECK(read_manifest(t.dir).step == 7);
    save_checkpoint(t.dir, 0, 1, 8, model(), shard(0, 6, 0, 5, 0, 4), nullptr);
    CHECK(read_manifest(t.dir).step == 8);
  }
  SECTION("between the renames: the new one loads from DIR.tmp") {
    save_checkpoint(t.dir + "-new", 0, 1, 8, model(), shard(0, 6, 0, 5, 0, 4), nullptr);
    fs::rename(t.dir, t.dir + ".old");
    fs::rename(t.dir + "-new", t.dir + ".tmp");
    CHECK(read_manifest(t.dir).step == 8);
    CHECK(load_error(t.dir, requests(0, 6)) == "(loaded)");
    save_checkpoint(t.dir, 0, 1, 9, model(), shard(0, 6, 0, 5, 0, 4), nullptr);
    CHECK(read_manifest(t.dir).step == 9);
    CHECK_FALSE(fs::exists(t.dir + ".old"));
  }
  SECTION("after the first rename, before the manifest of the new one: DIR.old loads") {
    fs::rename(t.dir, t.dir + ".old");
    CHECK(read_manifest(t.dir).step == 7);
  }
}

TEST_CASE("checkpoint: bad entries are refused before anything is written", "[exec-infra]") {
  TempCheckpoint t;
  CHECK_THROWS_AS(save_checkpoint(t.dir, 0, 2, 1, model(), {}, nullptr), std::invalid_argument);
  auto refused = [&](CheckpointEntry e, const std::string& why) {
    std::vector<CheckpointEntry> bad = shard(0, 6, 0, 5, 0, 4);
    bad.push_back(std::move(e));
    CHECK_THROWS_WITH(save_checkpoint(t.dir, 0, 1, 1, model(), bad, nullptr), Catch::Contains(why));
  };
  refused(entry("step", "f32", 0, 1, 1), "'step' (f32, rows 0..1, 4 bytes): not <tensor>/param");
  refused(entry("x/param", "f32", 0, 1, 1), "'x/param' (f32, rows 0..1, 4 bytes): not <tensor>");
  refused(entry("w/param", "f32", 0, 6, 5), "'w/param' (f32, rows 0..6, 120 bytes): given twice");
  refused(entry("e/variance", "bf16", 0, 4, 6), "f32 needed (bf16 only for momentum)");
  CheckpointEntry odd = entry("e/variance", "f32", 1, 2, 6);
  odd.bytes.pop_back();
  refused(odd, "the byte count does not match the rows");
  refused(entry("e/variance", "f32", 3, 5, 6), "rows outside the tensor, or none");
  refused(entry("e/variance", "f32", 1, 2, 6), "other rows than another entry of its tensor");
  CHECK_FALSE(fs::exists(t.dir));
  CHECK_FALSE(fs::exists(t.dir + ".tmp"));
}

TEST_CASE("checkpoint: a schema-2 checkpoint loads into the plan that wrote it", "[exec-infra]") {
  // Written byte by byte as the format of docs/checkpoint-format.md, "Older checkpoints",
  // describes it: magic, version 1, entry count, then name, dtype, byte count, bytes.
  TempCheckpoint t;
  fs::create_directories(t.dir);
  std::string file = "MUONCKPT";
  auto u64 = [&](uint64_t v) { file.append(reinterpret_cast<const char*>(&v), 8); };
  auto str = [&](const std::string& s) {
    const uint32_t n = uint32_t(s.size());
    file.append(reinterpret_cast<const char*>(&n), 4);
    file += s;
  };
  const CheckpointEntry w = entry("w/param", "f32", 0, 6, 5);
  u64(1);
  u64(2);
  str("step");
  str("i64");
  u64(8);
  u64(7);
  str(w.name);
  str(w.dtype);
  u64(w.bytes.size());
  file.append(reinterpret_cast<const char*>(w.bytes.data()), w.bytes.size());
  std::ofstream(t.dir + "/rank-00000.bin", std::ios::binary) << file;
  const nlohmann::json manifest = {{"schema", "muonplan.checkpoint/2"},
                                   {"step", 7},
                                   {"world_size", 1},
                                   {"plan_fingerprint", "fp"},
                                   {"checksum", "fnv1a-64"},
                                   {"ranks",
                                    {{{"file", "rank-00000.bin"},
                                      {"bytes", file.size()},
                                      {"checksum", digest_hex(fnv1a64(file))}}}}};
  std::ofstream(t.dir + "/manifest.json") << manifest.dump();
  const CheckpointManifest m = read_manifest(t.dir);
  REQUIRE(m.legacy);
  const auto got = load_legacy_rank_file(m, 0, 1, "fp");
  REQUIRE(got.size() == 1);
  CHECK(got[0].bytes == w.bytes);
  CHECK_THROWS_WITH(load_legacy_rank_file(m, 0, 1, "other"),
                    Catch::Contains("plan_fingerprint: the checkpoint is for plan \"fp\""));
  CHECK_THROWS_WITH(load_legacy_rank_file(m, 0, 2, "fp"),
                    Catch::Contains("world_size: the checkpoint was written by 1 ranks"));
  CHECK_THROWS_WITH(read_whole_checkpoint(t.dir), Catch::Contains("records no placements"));
  // A save over it replaces it (it is ours) with the new format.
  save_checkpoint(t.dir, 0, 1, 8, model(), shard(0, 6, 0, 5, 0, 4), nullptr);
  CHECK_FALSE(read_manifest(t.dir).legacy);
  CHECK_FALSE(fs::exists(t.dir + "/rank-00000.bin"));
}

TEST_CASE("checkpoint: read_whole_checkpoint reassembles whole tensors", "[exec-infra]") {
  TempCheckpoint t;
  save_checkpoint_all(t.dir, 4, model(),
                      {shard(0, 4, 0, 5, 0, 2, "bf16"), shard(4, 6, 0, 0, 2, 4, "bf16")});
  const WholeCheckpoint w = read_whole_checkpoint(t.dir);
  CHECK(w.step == 4);
  const auto want = shard(0, 6, 0, 5, 0, 4, "bf16");
  REQUIRE(w.entries.size() == want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    CHECK(w.entries[k].name == want[k].name);
    CHECK(w.entries[k].dtype == want[k].dtype);
    CHECK(w.entries[k].bytes == want[k].bytes);
  }
  CHECK(w.entries[5].shape == std::vector<int64_t>{4, 3, 2});
}

TEST_CASE(
    "checkpoint: the fields' table is what a save writes, a load checks and a whole "
    "read returns",
    "[exec-infra]") {
  // Each field of b (AdamW: it holds them all) in each dtype: saved and loaded back alike where
  // the table allows the dtype, refused by the save where it does not.
  int saved = 0;
  for (const CheckpointField& f : kCheckpointFields) {
    for (const CheckpointDtype* d : kCheckpointDtypes) {
      TempCheckpoint t;
      std::vector<CheckpointEntry> entries = shard(0, 6, 0, 5, 0, 4);
      const std::string name = std::string("b/") + f.name;
      const auto it = std::find_if(entries.begin(), entries.end(),
                                   [&](const CheckpointEntry& e) { return e.name == name; });
      REQUIRE(it != entries.end());
      *it = entry(name, d->entry, 0, 5, 1);
      if (!dtype_allowed(f, *d)) {
        CHECK_THROWS_WITH(save_checkpoint(t.dir, 0, 1, 1, model(), entries, nullptr),
                          Catch::Contains("f32 needed (bf16 only for momentum)"));
        continue;
      }
      save_checkpoint(t.dir, 0, 1, 1, model(), entries, nullptr);
      const auto got = load(t.dir, {{name, d->entry, 0, 5}});
      REQUIRE(got.size() == 1);
      CHECK(same_bytes(got[0], *it));
      ++saved;
    }
  }
  CHECK(saved == 4);  // param f32, momentum f32 and bf16, variance f32
  // A whole read returns exactly the fields each tensor holds.
  TempCheckpoint t;
  save_checkpoint(t.dir, 0, 1, 1, model(), shard(0, 6, 0, 5, 0, 4), nullptr);
  std::set<std::string> want, got;
  for (const CheckpointTensor& ct : model().tensors) {
    for (const CheckpointField& f : kCheckpointFields) {
      if (holds(f, ct.rule == "adamw")) want.insert(ct.name + "/" + f.name);
    }
  }
  for (const WholeEntry& e : read_whole_checkpoint(t.dir).entries) got.insert(e.name);
  CHECK(got == want);
  CHECK(want.size() == 7);
  // A name outside the table is refused, the message listing the table.
  CHECK(checkpoint_fields_text() == "/param, /momentum or /variance");
  std::vector<CheckpointEntry> bad = shard(0, 6, 0, 5, 0, 4);
  bad.push_back(entry("w/grad", "f32", 0, 6, 5));
  CHECK_THROWS_WITH(save_checkpoint(t.dir, 0, 1, 1, model(), bad, nullptr),
                    Catch::Contains("not <tensor>/param, /momentum or /variance of a tensor"));
}
