// Loading checkpoints into any plan of the same model (docs/checkpoint-format.md, "Loading"):
// every rank file says, in its safetensors metadata, which rows of which tensor it holds, so a
// rank gathers its shards from whichever files hold those rows, whatever plan wrote them.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "checkpoint/checkpoint_files.h"
#include "muonplan/base/error.h"
#include "muonplan/base/io.h"
#include "muonplan/base/regular_file.h"
#include "muonplan/exec/bf16.h"
#include "muonplan/exec/checkpoint.h"
#include "muonplan/exec/checkpoint_entries.h"
#include "muonplan/exec/digest.h"
#include "muonplan/exec/fnv1a.h"
#include "muonplan/exec/safetensors.h"

namespace muonplan::exec {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace ckpt;

std::string shape_text(const std::vector<int64_t>& shape) {
  return json(shape).dump();
}

[[noreturn]] void corrupt(const std::string& path, const std::string& what) {
  throw InputError({path, 0, 0}, "", "corrupt checkpoint file: " + what);
}

// One rank file's header, checked against the manifest: which rows of which tensor it holds.
struct FileView {
  std::string path;
  safetensors::Header header;
  std::map<std::string, std::pair<int64_t, int64_t>> rows;  // tensor -> [begin, end)
};

// "[b,e]" with 0 <= b < e <= n, else nothing.
bool parse_range(const std::string& text, int64_t n, std::pair<int64_t, int64_t>& out) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_array() || j.size() != 2 || !j[0].is_number_integer() || !j[1].is_number_integer())
    return false;
  out = {j[0].get<int64_t>(), j[1].get<int64_t>()};
  return out.first >= 0 && out.first < out.second && out.second <= n;
}

FileView view_of(const CheckpointManifest& m, int index, const std::string& header_text,
                 uint64_t data_bytes) {
  FileView v;
  v.path = m.dir + "/" + m.files[size_t(index)].name;
  try {
    v.header = safetensors::decode_header(header_text, data_bytes);
  } catch (const std::invalid_argument& e) {
    corrupt(v.path, e.what());
  }
  const auto& meta = v.header.metadata;
  auto meta_is = [&](const char* key, const std::string& want) {
    const auto it = meta.find(key);
    if (it == meta.end() || it->second != want) {
      corrupt(v.path, std::string("__metadata__ ") + key + " is " +
                          (it == meta.end() ? "missing" : "\"" + it->second + "\"") +
                          ", the manifest says \"" + want + "\"");
    }
  };
  meta_is("schema", kSchema);
  meta_is("step", std::to_string(m.step));
  meta_is("rank", std::to_string(index));
  meta_is("world_size", std::to_string(m.world));
  std::map<std::string, const CheckpointTensor*> tensors;
  for (const CheckpointTensor& t : m.info.tensors) tensors[t.name] = &t;
  for (const safetensors::Tensor& t : v.header.tensors) {
    if (t.name == kStepEntry) {
      if (t.dtype != "I64" || !t.shape.empty()) corrupt(v.path, "step is not an I64 scalar");
      continue;
    }
    const auto [tensor, field] = split_entry_name(t.name);
    const auto it = tensors.find(tensor);
    const CheckpointField* kind = checkpoint_field(field);
    if (it == tensors.end() || !kind)
      corrupt(v.path, "entry '" + t.name + "' is no state of a tensor in the manifest");
    const CheckpointTensor& ct = *it->second;
    const CheckpointDtype* dtype = safetensors_checkpoint_dtype(t.dtype);
    if (!dtype || !dtype_allowed(*kind, *dtype))
      corrupt(v.path, "entry '" + t.name + "' is " + t.dtype);
    const std::string key = tensor + (ct.stack ? "/experts" : "/rows");
    const auto shape = meta.find(tensor + "/shape");
    const auto range = meta.find(key);
    if (shape == meta.end() || shape->second != shape_text(ct.shape))
      corrupt(v.path, "__metadata__ " + tensor + "/shape differs from the manifest's");
    std::pair<int64_t, int64_t> r;
    if (range == meta.end() || !parse_range(range->second, ct.shape[0], r))
      corrupt(v.path, "__metadata__ " + key + " is missing or not [begin,end] inside the tensor");
    std::vector<int64_t> want = ct.shape;
    want[0] = r.second - r.first;
    if (t.shape != want) {
      corrupt(v.path, "entry '" + t.name + "' has shape " + shape_text(t.shape) + ", its " + key +
                          " " + range->second + " make " + shape_text(want));
    }
    v.rows[tensor] = r;
  }
  return v;
}

// Reads every rank file's header (and checks its size against the manifest).
std::vector<FileView> read_headers(const CheckpointManifest& m) {
  std::vector<FileView> views;
  for (int i = 0; i < m.world; ++i) {
    const CheckpointFile& f = m.files[size_t(i)];
    const std::string path = m.dir + "/" + f.name;
    check_regular_input(path);  // before the open: a FIFO there would block it
    std::error_code ec;
    const uint64_t actual = fs::file_size(path, ec);
    std::ifstream in(path, std::ios::binary);
    if (ec || !in) throw InputError({path, 0, 0}, "file", "cannot be read");
    if (actual != f.bytes) {
      throw InputError({path, 0, 0}, "",
                       "truncated or extended: " + std::to_string(actual) +
                           " bytes, the manifest says " + std::to_string(f.bytes));
    }
    unsigned char len[8];
    if (actual < 8 || !in.read(reinterpret_cast<char*>(len), 8))
      corrupt(path, "shorter than a safetensors header");
    const uint64_t n = safetensors::header_length(len);
    if (n > safetensors::kMaxHeaderBytes || n > actual - 8)
      corrupt(path, "the header length runs past the end of the file");
    std::string text(n, '\0');
    if (!in.read(text.data(), std::streamsize(n))) corrupt(path, "read failed");
    views.push_back(view_of(m, i, text, actual - 8 - n));
  }
  return views;
}

// Whether a stored entry (its safetensors dtype) would be widened into a request (its entry
// dtype): bf16 to fp32 cannot restore the bits bf16 dropped.
bool widens(const std::string& stored, const std::string& wanted) {
  return stored == kCheckpointBf16.safetensors && wanted == kCheckpointF32.entry;
}

// Copies rows [lo, hi) of a stored entry into a request, converting fp32 to bf16 if asked.
void copy_rows(const unsigned char* src, const std::string& src_dtype, int64_t src_begin,
               CheckpointEntry& dst, int64_t lo, int64_t hi, int64_t row) {
  const size_t n = size_t((hi - lo) * row);
  const size_t src_at = size_t((lo - src_begin) * row), dst_at = size_t((lo - dst.begin) * row);
  if (src_dtype == kCheckpointF32.safetensors && dst.dtype == kCheckpointBf16.entry) {
    bf16* out = reinterpret_cast<bf16*>(dst.bytes.data()) + dst_at;
    const unsigned char* in = src + src_at * 4;
    for (size_t k = 0; k < n; ++k) {
      float f;
      std::memcpy(&f, in + 4 * k, 4);
      out[k] = to_bf16(f);
    }
    return;
  }
  const size_t size = checkpoint_dtype(dst.dtype)->bytes;  // gather has checked it
  std::memcpy(dst.bytes.data() + dst_at * size, src + src_at * size, n * size);
}

// An empty entry per request (each checked against the manifest's tensors), a coverage mark per
// row of each, and each entry's index by name.
void requested_entries(const std::vector<ShardRequest>& wants,
                       const std::map<std::string, const CheckpointTensor*>& tensors,
                       std::vector<CheckpointEntry>& out, std::vector<std::vector<char>>& covered,
                       std::map<std::string, size_t>& by_name) {
  for (const ShardRequest& q : wants) {
    const auto it = tensors.find(split_entry_name(q.name).first);
    if (it == tensors.end() || q.begin < 0 || q.begin >= q.end || q.end > it->second->shape[0] ||
        !checkpoint_dtype(q.dtype) || by_name.count(q.name))
      throw std::invalid_argument("load_shards: bad request for " + q.name);
    const size_t size = checkpoint_dtype(q.dtype)->bytes;
    out.push_back(
        {q.name, q.dtype, q.begin, q.end,
         std::vector<uint8_t>(size_t((q.end - q.begin) * row_elems(it->second->shape)) * size)});
    covered.emplace_back(size_t(q.end - q.begin), 0);
    by_name[q.name] = out.size() - 1;
  }
}

// Which files this rank reads: those holding wanted rows, and the files i with i % world ==
// rank whether or not they do (between them the ranks read every file); a bf16 entry asked for
// as fp32 is refused here, before any file is read whole.
std::vector<bool> files_to_read(const std::vector<FileView>& views,
                                const std::vector<CheckpointEntry>& out,
                                const std::map<std::string, size_t>& by_name, int rank, int world) {
  std::vector<bool> read(views.size(), false);
  for (size_t i = 0; i < views.size(); ++i) {
    read[i] = int(i) % world == rank;
    for (const safetensors::Tensor& t : views[i].header.tensors) {
      const auto q = by_name.find(t.name);
      if (q == by_name.end()) continue;
      const CheckpointEntry& e = out[q->second];
      const auto r = views[i].rows.at(split_entry_name(t.name).first);
      if (r.second <= e.begin || r.first >= e.end) continue;
      if (widens(t.dtype, e.dtype)) {
        throw InputError({views[i].path, 0, 0}, "",
                         t.name +
                             ": bf16 in the checkpoint, fp32 in this plan; widening "
                             "cannot restore the bits bf16 dropped: resume it with "
                             "--bf16-momentum");
      }
      read[i] = true;
    }
  }
  return read;
}

// File i of the manifest, read whole and checked against its checksum.
std::vector<unsigned char> read_verified(const CheckpointManifest& m, size_t i,
                                         const std::string& path) {
  const CheckpointFile& f = m.files[i];
  check_regular_input(path);  // before the open: a FIFO there would block it
  std::ifstream in(path, std::ios::binary);
  std::vector<unsigned char> file(f.bytes);
  if (!in || !in.read(reinterpret_cast<char*>(file.data()), std::streamsize(file.size())))
    throw InputError({path, 0, 0}, "file", "cannot be read");
  const uint64_t sum = fnv1a64(file.data(), file.size(), m.fnv_basis);
  if (digest_hex(sum) != f.checksum) {
    throw InputError(
        {path, 0, 0}, "",
        "checksum mismatch: fnv1a-64 " + digest_hex(sum) + ", the manifest says " + f.checksum);
  }
  return file;
}

std::vector<CheckpointEntry> gather(const CheckpointManifest& m, const std::vector<FileView>& views,
                                    int rank, int world, const std::vector<ShardRequest>& wants) {
  std::map<std::string, const CheckpointTensor*> tensors;
  for (const CheckpointTensor& t : m.info.tensors) tensors[t.name] = &t;
  std::vector<CheckpointEntry> out;
  std::vector<std::vector<char>> covered;
  std::map<std::string, size_t> by_name;
  requested_entries(wants, tensors, out, covered, by_name);
  const std::vector<bool> read = files_to_read(views, out, by_name, rank, world);
  for (size_t i = 0; i < views.size(); ++i) {
    if (!read[i]) continue;
    const std::string& path = views[i].path;
    const std::vector<unsigned char> file = read_verified(m, i, path);
    // The checksum vouches for these bytes; the header is parsed again from them.
    const uint64_t n = safetensors::header_length(file.data());
    const FileView v =
        view_of(m, int(i), std::string(reinterpret_cast<const char*>(file.data()) + 8, n),
                file.size() - 8 - n);
    const unsigned char* data = file.data() + v.header.data_start;
    for (const safetensors::Tensor& t : v.header.tensors) {
      if (t.name == kStepEntry) {
        if (std::memcmp(data + t.begin, &m.step, 8) != 0)
          corrupt(path, "its step differs from the manifest's");
        continue;
      }
      const auto q = by_name.find(t.name);
      if (q == by_name.end()) continue;
      CheckpointEntry& e = out[q->second];
      const auto r = v.rows.at(split_entry_name(t.name).first);
      const int64_t lo = std::max(r.first, e.begin), hi = std::min(r.second, e.end);
      if (lo >= hi) continue;
      if (widens(t.dtype, e.dtype))
        throw InputError({path, 0, 0}, "", t.name + ": bf16 in the checkpoint, fp32 here");
      const CheckpointTensor& ct = *tensors.at(split_entry_name(t.name).first);
      copy_rows(data + t.begin, t.dtype, r.first, e, lo, hi, row_elems(ct.shape));
      std::fill(covered[q->second].begin() + (lo - e.begin),
                covered[q->second].begin() + (hi - e.begin), 1);
    }
  }
  for (size_t k = 0; k < out.size(); ++k) {
    const auto hole = std::find(covered[k].begin(), covered[k].end(), 0);
    if (hole == covered[k].end()) continue;
    const int64_t first = out[k].begin + (hole - covered[k].begin());
    throw InputError({m.path, 0, 0}, "",
                     out[k].name + ": row " + std::to_string(first) +
                         " is in no rank file (the checkpoint lacks state this plan needs)");
  }
  return out;
}

}  // namespace

CheckpointManifest read_manifest(const std::string& dir_arg) {
  const std::string dir = without_trailing_slash(dir_arg);
  CheckpointManifest m;
  m.dir = dir;
  for (const std::string& d : {dir, dir + ".tmp", dir + ".old"}) {
    if (fs::exists(d + "/manifest.json")) {
      m.dir = d;
      break;
    }
  }
  m.path = m.dir + "/manifest.json";
  // Nothing there at all (a mistyped path): say so, rather than that DIR/manifest.json cannot be
  // read. A directory without a manifest is reported by the read below.
  std::error_code ec;
  if (!fs::exists(m.dir, ec) && !fs::exists(dir + ".tmp", ec) && !fs::exists(dir + ".old", ec)) {
    throw InputError(
        {}, "",
        dir + ": no checkpoint there (no such directory, nor " + dir + ".tmp or " + dir + ".old)");
  }
  const json j = read_json_file(m.path);
  auto field = [&](const char* key) -> const json& {
    if (!j.is_object() || !j.contains(key)) throw InputError({m.path, 0, 0}, key, "missing");
    return j[key];
  };
  const json& schema = field("schema");
  m.legacy = schema == kLegacySchema2 || schema == kLegacySchema1;
  if (schema != kSchema && !m.legacy) {
    throw InputError({m.path, 0, 0}, "schema",
                     std::string("expected ") + kSchema + " (or the older " + kLegacySchema2 +
                         ", " + kLegacySchema1 + "), got " + json_brief(schema));
  }
  m.fnv_basis = schema == kLegacySchema1 ? kLegacyFnvBasis : kFnv1a64Basis;
  try {
    // Only the checksum save writes, and only files inside the checkpoint: "../x.bin" or an
    // absolute path would read (and trust) a file elsewhere.
    if (field("checksum") != "fnv1a-64") {
      throw InputError({m.path, 0, 0}, "checksum",
                       "expected \"fnv1a-64\", got " + json_brief(field("checksum")));
    }
    const json& step = field("step");
    if (!step.is_number_integer() ||
        (step.is_number_unsigned() && step.get<uint64_t>() > uint64_t(INT64_MAX))) {
      throw InputError({m.path, 0, 0}, "step", checkpoint_step_message(step.dump().substr(0, 40)));
    }
    if (const std::string why = checkpoint_step_fault(step.get<int64_t>()); !why.empty())
      throw InputError({m.path, 0, 0}, "step", why);
    m.step = step.get<int64_t>();
    m.world = field("world_size").get<int>();
    if (m.world < 1) throw InputError({m.path, 0, 0}, "", "world size below 1");
    m.info.fingerprint = field("plan_fingerprint").get<std::string>();
    const json& ranks = field("ranks");
    if (!ranks.is_array() || ranks.size() != size_t(m.world))
      throw InputError({m.path, 0, 0}, "ranks", "expected one file per rank of world_size");
    for (int r = 0; r < m.world; ++r) {
      const json& e = ranks[size_t(r)];
      if (e.at("file") != rank_file(r, m.legacy)) {
        throw InputError(
            {m.path, 0, 0}, "ranks[" + std::to_string(r) + "].file",
            "expected \"" + rank_file(r, m.legacy) + "\", got " + json_brief(e.at("file")));
      }
      m.files.push_back({e.at("file").get<std::string>(), e.at("bytes").get<uint64_t>(),
                         e.at("checksum").get<std::string>()});
    }
    if (m.legacy) return m;
    m.info.layout = field("layout").get<std::string>();
    m.info.offload = field("offload").get<std::string>();
    m.info.bf16_momentum = field("bf16_momentum").get<bool>();
    std::set<std::string> names;
    for (const json& t : field("tensors")) {
      CheckpointTensor ct{t.at("name").get<std::string>(),
                          t.at("shape").get<std::vector<int64_t>>(),
                          t.at("rule").get<std::string>(), t.at("stack").get<bool>()};
      const bool ok = !ct.shape.empty() &&
                      std::all_of(ct.shape.begin(), ct.shape.end(),
                                  [](int64_t d) { return d > 0 && d < (int64_t{1} << 40); }) &&
                      (ct.rule == "muon" || ct.rule == "adamw") && names.insert(ct.name).second;
      if (!ok)
        throw InputError({m.path, 0, 0}, "tensors", "bad or repeated entry " + json_brief(t));
      m.info.tensors.push_back(std::move(ct));
    }
  } catch (const json::exception& e) {
    throw InputError({m.path, 0, 0}, "", std::string("malformed manifest: ") + e.what());
  }
  return m;
}

void check_same_model(const CheckpointManifest& m, const CheckpointPlanInfo& plan) {
  std::map<std::string, const CheckpointTensor*> theirs;
  for (const CheckpointTensor& t : m.info.tensors) theirs[t.name] = &t;
  auto refuse = [&](const std::string& what) {
    throw InputError({m.path, 0, 0}, "tensors",
                     "the checkpoint is of another model: " + what +
                         " (a checkpoint loads into plans of the same tensors and shapes)");
  };
  std::set<std::string> ours;
  for (const CheckpointTensor& t : plan.tensors) {
    ours.insert(t.name);
    const auto it = theirs.find(t.name);
    if (it == theirs.end()) refuse(t.name + " is not in it");
    const CheckpointTensor& c = *it->second;
    if (c.shape != t.shape || c.stack != t.stack) {
      refuse(t.name + " has shape " + shape_text(c.shape) + (c.stack ? " (expert stack)" : "") +
             " there, " + shape_text(t.shape) + (t.stack ? " (expert stack)" : "") + " here");
    }
    if (c.rule != t.rule)
      refuse(t.name + " is updated by " + c.rule + " there, by " + t.rule + " here");
  }
  for (const CheckpointTensor& t : m.info.tensors) {
    if (!ours.count(t.name)) refuse(t.name + " is in it but not in this plan's model");
  }
}

std::vector<CheckpointEntry> load_shards(const CheckpointManifest& m, int rank, int world,
                                         const std::vector<ShardRequest>& wants) {
  if (m.legacy) throw std::invalid_argument("load_shards: a legacy checkpoint");
  return gather(m, read_headers(m), rank, world, wants);
}

WholeCheckpoint read_whole_checkpoint(const std::string& dir) {
  const CheckpointManifest m = read_manifest(dir);
  if (m.legacy) {
    throw InputError({m.path, 0, 0}, "schema",
                     "a checkpoint of schema 1 or 2 records no placements; resume it with the "
                     "plan that wrote it and save again to convert it to " +
                         std::string(kSchema));
  }
  const std::vector<FileView> views = read_headers(m);
  // The stored dtype of each entry (the first file that holds it says).
  std::map<std::string, std::string> dtype;
  for (const FileView& v : views) {
    for (const safetensors::Tensor& t : v.header.tensors)
      dtype.emplace(t.name, t.dtype == kCheckpointBf16.safetensors ? kCheckpointBf16.entry
                                                                   : kCheckpointF32.entry);
  }
  std::vector<ShardRequest> wants;
  for (const CheckpointTensor& t : m.info.tensors) {
    for (const CheckpointField& field : kCheckpointFields) {
      const std::string name = t.name + "/" + field.name;
      // Variance exists for AdamW tensors only; the others must be there (a missing one is
      // reported by gather as rows in no rank file).
      if (!holds(field, t.rule == "adamw")) continue;
      const auto it = dtype.find(name);
      wants.push_back({name, it == dtype.end() ? kCheckpointF32.entry : it->second, 0, t.shape[0]});
    }
  }
  WholeCheckpoint out;
  out.step = m.step;
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const CheckpointTensor& t : m.info.tensors) shapes[t.name] = t.shape;
  for (CheckpointEntry& e : gather(m, views, 0, 1, wants)) {
    out.entries.push_back(
        {e.name, e.dtype, shapes.at(split_entry_name(e.name).first), std::move(e.bytes)});
  }
  return out;
}

}  // namespace muonplan::exec
