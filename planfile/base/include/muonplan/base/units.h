// Units and limits shared by every part of muonplan: one definition each, so that a figure
// printed in GiB by the CLI means what the plan file's GiB means, and a world the search
// accepts is one the plan loader and the topology loader accept too.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace muonplan {

// Memory figures are GiB (2^30 bytes); traffic and bandwidths are GB (1e9 bytes), as the
// vendors quote links (docs/cli-contract.md).
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kGB = 1e9;

// The largest world (nodes x GPUs per node) muonplan plans, loads a plan for, or builds a
// device graph for. Per-rank tables grow with it, so it is checked before anything is
// allocated (docs/planner.md, "Limits").
inline constexpr int64_t kMaxWorldRanks = 131072;
// GPUs (ranks) per node.
inline constexpr int64_t kMaxGpusPerNode = 1024;
// Parameters in one model: a larger count is a typo, and element counts stay exact in doubles.
inline constexpr double kMaxParams = 1e15;
// The largest dimension of any tensor: a width (hidden, ffn, vocab) is at most this, and so is
// a product of two fields (heads x head_dim). Plans are read back with the same bound.
inline constexpr int64_t kMaxTensorDim = 100'000'000;
// Muon batches between their exchanges at once: the lanes (buffer sets, streams) a backend
// keeps, and the most a plan file may ask for.
inline constexpr int kMaxBatchesInFlight = 4;

// `v` to `digits` significant digits, as printf's %g writes it: the form a figure takes in a
// message, and a fitted constant in the YAML calibrate writes (read back bit for bit by stod).
inline std::string sig_figs(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

// A memory figure as printed: GiB with `decimals` places from 1 GiB up, MiB with one place
// under it, so a small model's 20 MiB peak does not read "0.0 GiB" (issue 36 item 13).
inline std::string memory_text(double bytes, int decimals) {
  char buf[48];
  if (bytes >= kGiB || bytes <= -kGiB || bytes == 0) {
    std::snprintf(buf, sizeof buf, "%.*f GiB", decimals, bytes / kGiB);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1024.0 * 1024.0));
  }
  return buf;
}

}  // namespace muonplan
