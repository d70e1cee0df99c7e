// Every file muonplan reads or writes goes through here (docs/reliability.md, "Input and output
// files"): inputs must be regular files of bounded size, so /dev/zero, a FIFO or a directory is
// a one-line error instead of unbounded memory, a hang or a stream error without the file name;
// outputs are replaced atomically, so a full disk or a failed command never leaves a truncated
// file, and every write is checked.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace muonplan {

// No input muonplan reads (model, topology, workload, plan, metrics) comes near this.
inline constexpr int64_t kMaxInputFileBytes = int64_t{64} << 20;

// The contents of a regular file of at most max_bytes (kMaxInputFileBytes unless smaller).
// InputError "PATH: FIELD: message" otherwise (missing, unreadable, a directory, a FIFO or
// device, larger); never more than max_bytes is read, and a FIFO is refused before it is opened.
std::string read_input_file(const std::string& path, const std::string& field = "file",
                            int64_t max_bytes = kMaxInputFileBytes);

// nlohmann's parse_error text for a message: its "[json.exception...] parse error at ...: "
// prefix dropped and the input it quotes ("last read: '...'") cut to 40 characters and escaped
// (bytes outside printable ASCII as \xNN), so a file that is not JSON (a config.json linked to
// a system file) is never echoed.
std::string json_error_text(const std::string& what);

// `text` parsed as JSON: a syntax error, or a text past json_bounds.h's bounds (depth, array
// length, values), is an InputError "PATH:LINE:COL: json: ...".
nlohmann::json parse_json_text(const std::string& text, const std::string& path);

// A JSON value for an error message, bounded whatever the input: scalars as written (strings cut
// at 60 characters), containers as "an object of N keys" / "an array of N values".
std::string json_brief(const nlohmann::json& v);

// read_input_file parsed as JSON; a syntax error is an InputError "PATH:LINE:COL: json: ...",
// and so is a key given twice in one object ("PATH:LINE:COL: KEY: given twice, at lines A and
// B"): it reads muonplan's own formats (plans, metrics), not Hugging Face configs.
nlohmann::json read_json_file(const std::string& path, const std::string& field = "file");

// Replaces `path` with `data`: a temporary file beside it (".NAME.tmp.PID"), every write
// checked, fsync, then rename. On failure the temporary is removed, the old file is left as it
// was, and std::runtime_error "cannot write PATH: reason" is thrown (exit 1 at the CLI).
// A target that exists but is not a regular file (/dev/full, a FIFO) or is a symbolic link
// (/dev/stdout) cannot be renamed over: it is opened and written in place, writes checked.
void write_file_atomic(const std::string& path, const std::string& data);

}  // namespace muonplan
