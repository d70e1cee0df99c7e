#include "muonplan/planfile/ns_workspace.h"

#include <algorithm>

namespace muonplan {
namespace {

constexpr size_t kRegionAlign = 256;

size_t aligned(size_t bytes) {
  return (bytes + kRegionAlign - 1) / kRegionAlign * kRegionAlign;
}

}  // namespace

NsWorkspaceLayout ns_workspace_layout(int64_t batch, int64_t rows, int64_t cols) {
  const auto m = static_cast<size_t>(std::min(rows, cols));
  const auto n = static_cast<size_t>(std::max(rows, cols));
  const auto nb = static_cast<size_t>(batch);
  NsWorkspaceLayout l;
  size_t at = 0;
  auto take = [&at](size_t bytes) {
    const size_t here = at;
    at += aligned(bytes);
    return here;
  };
  l.x0 = take(nb * m * n * 2);  // bf16
  l.x1 = take(nb * m * n * 2);
  l.a = take(nb * m * m * 2);
  l.b = take(nb * m * m * 2);
  l.sum_sq = take(nb * sizeof(float));
  l.scale = take(nb * sizeof(float));
  l.total = at;
  return l;
}

}  // namespace muonplan
