// Bounds on how deep and how many values a JSON input may hold, checked on the text before it is
// parsed: nlohmann builds ~40 bytes a value, and frees an array through a vector it allocates in a
// noexcept destructor, so a 60 MB file of 30M integers took 1.1 GB and, out of memory,
// aborted instead of failing (docs/reliability.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "muonplan/base/error.h"

namespace muonplan {

// Longest array in any muonplan input: a plan's per-rank lists hold at most kMaxWorldRanks
// (131,072) entries and a model at most ~10^5 tensors; a 64 MiB trace at most ~700,000 events.
inline constexpr int64_t kMaxJsonArrayElements = int64_t{1} << 20;
// Values (scalars, arrays, objects) in one input: room for the largest trace, ~300 MB parsed.
inline constexpr int64_t kMaxJsonValues = int64_t{8} << 20;

// No muonplan format (plan, metrics, trace, Hugging Face config) nests past a few levels; a
// deeper file is refused before it is parsed (nlohmann's dump() recursed through 100,000
// nested arrays and overflowed the stack).
inline constexpr int kMaxJsonDepth = 64;

// InputError "FILE:LINE:COL: json: ..." at the first container nested deeper than
// kMaxJsonDepth, the first array past kMaxJsonArrayElements elements, or the value past
// kMaxJsonValues in all. One pass over the text, strings skipped, before anything is parsed.
void check_json_bounds(const std::string& text, const std::string& path);

// LINE:COL (1-based) of byte `offset` (0-based) of `text`, for an error at that byte.
SourceLoc text_location(const std::string& text, size_t offset, const std::string& path);

// A key given twice in one JSON object (nlohmann keeps the last silently).
struct DuplicateKey {
  std::string field;        // dotted path, as plan errors name fields: "chunks[3].kind"
  SourceLoc first, second;  // where each occurrence of the key starts
};
// Every duplicate key of `text`, which must be valid JSON (parse it first).
std::vector<DuplicateKey> find_duplicate_keys(const std::string& text, const std::string& path);
// InputError at the second occurrence of the first duplicate key of `text`:
// "FILE:LINE:COL: FIELD: given twice, at lines A and B". read_json_file (io.h) applies it to
// every JSON file of ours (plans, metrics); Hugging Face configs only warn (hf_import.cc).
void refuse_duplicate_keys(const std::string& text, const std::string& path);

}  // namespace muonplan
