// A small list scheduler: chunks enter in order, at most `depth` at once; each chunk's stages
// run in sequence; each resource runs one stage at a time, picking the earliest-ready stage
// (lower chunk index on ties). This is how the executor overlaps one batch's all-to-all with
// another's NS.
#include <algorithm>
#include <limits>

#include "muonplan/planner/cost_model.h"

namespace muonplan {

PipelineResult simulate_pipeline(const std::vector<std::vector<Stage>>& chunks, int depth) {
  PipelineResult out;
  out.busy_s.assign(kResourceCount, 0);
  const size_t n = chunks.size();
  const size_t window = static_cast<size_t>(std::max(1, depth));
  std::vector<size_t> next(n, 0);   // next stage index per chunk
  std::vector<double> ready(n, 0);  // when that stage may start
  std::vector<double> done(n, 0);   // when the chunk finished
  std::vector<char> is_done(n, 0);
  std::vector<double> free_at(kResourceCount, 0);
  size_t admitted = 0, prefix = 0, n_done = 0;
  // Chunk i enters once chunk i - depth has finished (a buffer slot is free again).
  auto admit = [&]() {
    while (admitted < n && admitted < prefix + window) {
      const size_t i = admitted++;
      ready[i] = i >= window ? done[i - window] : 0;
      if (chunks[i].empty()) {
        is_done[i] = 1;
        done[i] = ready[i];
        ++n_done;
      }
    }
    while (prefix < n && is_done[prefix] && prefix < admitted) ++prefix;
  };
  admit();
  while (n_done < n) {
    size_t best = n;
    double best_start = std::numeric_limits<double>::infinity();
    for (size_t i = prefix; i < admitted; ++i) {
      if (is_done[i]) continue;
      const int r = static_cast<int>(chunks[i][next[i]].resource);
      const double start = std::max(ready[i], free_at[r]);
      if (start < best_start) {
        best_start = start;
        best = i;
      }
    }
    if (best == n) {  // only empty chunks were admitted
      admit();
      continue;
    }
    const Stage& s = chunks[best][next[best]];
    const int r = static_cast<int>(s.resource);
    const double end = best_start + s.seconds;
    free_at[r] = end;
    out.busy_s[r] += s.seconds;
    out.spans.push_back({int(best), int(next[best]), s.resource, s.what, best_start, end});
    ready[best] = end;
    out.makespan_s = std::max(out.makespan_s, end);
    if (++next[best] == chunks[best].size()) {
      is_done[best] = 1;
      done[best] = end;
      ++n_done;
    }
    admit();
  }
  return out;
}

}  // namespace muonplan
