// The safetensors container (huggingface/safetensors, "Format"), written and read by hand: an
// 8-byte little-endian u64 N, N bytes of JSON, then the data. The JSON maps each tensor name
// to {"dtype", "shape", "data_offsets": [begin, end]} (byte offsets into the data that follows
// the header), plus an optional "__metadata__", a map of strings to strings. Checkpoint rank
// files use it (docs/checkpoint-format.md) so that any safetensors reader opens them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace muonplan::exec::safetensors {

// The reference implementation refuses headers over 100 MB; so do we, before allocating.
inline constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;

struct Tensor {
  std::string name;
  std::string dtype;            // "F32", "BF16" or "I64": the ones a checkpoint holds
  std::vector<int64_t> shape;   // [] for a scalar
  uint64_t begin = 0, end = 0;  // data_offsets, bytes from the start of the data
};

// Bytes per element of a dtype we read or write; 0 for any other.
size_t dtype_size(std::string_view dtype);

// The first 8 + N bytes of a file holding `tensors` in this order, back to back: their
// data_offsets are set from the shapes. The JSON is padded with spaces (as the format allows)
// so that the data starts at a multiple of 8 bytes.
std::string encode_header(std::vector<Tensor>& tensors,
                          const std::map<std::string, std::string>& metadata);

struct Header {
  std::vector<Tensor> tensors;  // in data order
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;  // 8 + N
};

// N from the first 8 bytes of a file.
uint64_t header_length(const unsigned char* first8);

// Parses the N bytes of JSON of a file whose data has `data_bytes` bytes, checking what the
// format requires: known dtypes, shapes of non-negative sizes, offsets that match the shape and
// together cover the data exactly (no gaps, no overlaps), string metadata, no key given twice.
// Throws std::invalid_argument saying what is wrong.
Header decode_header(std::string_view json, uint64_t data_bytes);

}  // namespace muonplan::exec::safetensors
