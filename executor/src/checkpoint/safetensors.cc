#include "muonplan/exec/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "muonplan/base/error.h"
#include "muonplan/base/json_bounds.h"
#include "muonplan/planfile/plan_checks.h"

namespace muonplan::exec::safetensors {
namespace {

static_assert(std::endian::native == std::endian::little, "the format is little-endian");

[[noreturn]] void fail(const std::string& what) {
  throw std::invalid_argument(what);
}

// Elements of a shape, or -1 when a dimension is negative or the product overflows 2^62.
int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && n > (int64_t{1} << 62) / d)) return -1;
    n *= d;
  }
  return n;
}

}  // namespace

size_t dtype_size(std::string_view dtype) {
  return dtype == "F32" ? 4 : dtype == "BF16" ? 2 : dtype == "I64" ? 8 : 0;
}

std::string encode_header(std::vector<Tensor>& tensors,
                          const std::map<std::string, std::string>& metadata) {
  // ordered_json: entries appear in data order, which is how people read a header.
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  if (!metadata.empty()) j["__metadata__"] = metadata;
  uint64_t at = 0;
  for (Tensor& t : tensors) {
    const int64_t n = element_count(t.shape);
    if (n < 0 || dtype_size(t.dtype) == 0 || t.name.empty() || t.name == "__metadata__")
      throw std::invalid_argument("safetensors: cannot write tensor '" + t.name + "'");
    t.begin = at;
    t.end = at + uint64_t(n) * dtype_size(t.dtype);
    at = t.end;
    j[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {t.begin, t.end}}};
  }
  std::string text = j.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t n = text.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + text;
}

uint64_t header_length(const unsigned char* first8) {
  uint64_t n;
  std::memcpy(&n, first8, 8);
  return n;
}

Header decode_header(std::string_view text, uint64_t data_bytes) {
  if (text.empty() || text.front() != '{') fail("the header is not a JSON object");
  try {
    refuse_duplicate_keys(std::string(text), "header");
  } catch (const InputError& e) {
    fail(std::string("header: ") + e.field() + ": " + e.message());
  }
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) fail("the header is not a JSON object");
  Header h;
  for (const auto& [name, v] : j.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) fail("__metadata__ is not an object");
      for (const auto& [k, s] : v.items()) {
        if (!s.is_string()) fail("__metadata__ value of '" + k + "' is not a string");
        h.metadata[k] = s.get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor '" + name + "': ";
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") ||
        !v.contains("data_offsets") || v.size() != 3)
      fail(where + "needs exactly dtype, shape and data_offsets");
    Tensor t;
    t.name = name;
    if (!v["dtype"].is_string() || dtype_size(v["dtype"].get<std::string>()) == 0)
      fail(where + "dtype " + v["dtype"].dump() + " is not F32, BF16 or I64");
    t.dtype = v["dtype"].get<std::string>();
    if (!v["shape"].is_array()) fail(where + "shape is not a list");
    for (const auto& d : v["shape"]) {
      if (!d.is_number_integer()) fail(where + "shape holds a non-integer");
      t.shape.push_back(d.get<int64_t>());
    }
    const auto& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
        !off[1].is_number_unsigned())
      fail(where + "data_offsets is not two non-negative integers");
    t.begin = off[0].get<uint64_t>();
    t.end = off[1].get<uint64_t>();
    const int64_t n = element_count(t.shape);
    if (n < 0) fail(where + "bad shape");
    if (t.begin > t.end || t.end > data_bytes)
      fail(where + "data_offsets run past the end of the file");
    if (t.end - t.begin != uint64_t(n) * dtype_size(t.dtype))
      fail(where + "data_offsets do not match dtype and shape");
    h.tensors.push_back(std::move(t));
  }
  std::sort(h.tensors.begin(), h.tensors.end(), [](const Tensor& a, const Tensor& b) {
    return a.begin < b.begin || (a.begin == b.begin && a.end < b.end);
  });
  uint64_t at = 0;
  for (const Tensor& t : h.tensors) {
    if (t.begin != at) fail("tensor '" + t.name + "': data overlaps another or leaves a gap");
    at = t.end;
  }
  if (at != data_bytes) fail("the data has bytes no tensor covers");
  h.data_start = 8 + text.size();
  return h;
}

}  // namespace muonplan::exec::safetensors
