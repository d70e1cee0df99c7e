// A step's timeline through the caching-allocator model: its peaks, where they fall and what
// is live there (step_timeline.h).
#include <algorithm>
#include <cstdio>
#include <map>

#include "cost/step_timeline.h"

namespace muonplan {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// The tensors live after event `upto`, summed by kind, largest first: their blocks (`live`),
// and what they requested (`requested`, the blocks' rounding beside it).
TimelinePeak peak_at(const StepTimeline& tl, const std::vector<int64_t>& block, size_t upto,
                     int64_t bytes) {
  std::vector<char> live(tl.tensors.size(), 0);
  for (size_t i = 0; i <= upto && i < tl.events.size(); ++i)
    live[size_t(tl.events[i].tensor)] = tl.events[i].alloc ? 1 : 0;
  struct Kind {
    double block = 0, requested = 0;
    int count = 0;
    int largest = -1;
  };
  std::map<std::string_view, Kind> kinds;
  TimelinePeak p;
  p.bytes = bytes;
  p.where = upto < tl.events.size() ? tl.phases[size_t(tl.events[upto].where)] : "";
  // Tensors of a kind come in runs (a parameter's shards, then its gradients, ...): the last
  // kind is looked up again only when the kind's text moves.
  std::string_view last_kind;
  Kind* last = nullptr;
  for (size_t t = 0; t < live.size(); ++t) {
    if (!live[t]) continue;
    const std::string_view kind = tl.tensors[t].kind;
    if (!last || kind.data() != last_kind.data() || kind.size() != last_kind.size())
      last = &kinds[kind], last_kind = kind;
    Kind& k = *last;
    k.block += double(block[t]);
    k.requested += double(tl.tensors[t].bytes);
    p.rounding += block[t] - tl.tensors[t].bytes;
    ++k.count;
    if (k.largest < 0 || block[t] > block[size_t(k.largest)]) k.largest = int(t);
    ++p.live_tensors;
  }
  for (const auto& [name, k] : kinds) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " (%.1f MiB)", double(block[size_t(k.largest)]) / kMiB);
    const std::string what = std::to_string(k.count) + " tensor(s) live; largest " +
                             tl.tensors[size_t(k.largest)].name() + buf;
    p.live.push_back({std::string(name), k.block, what});
    p.requested.push_back({std::string(name), k.requested, "at " + p.where + ": " + what});
  }
  auto largest_first = [](std::vector<Term>& terms) {
    std::stable_sort(terms.begin(), terms.end(),
                     [](const Term& a, const Term& b) { return a.value > b.value; });
  };
  largest_first(p.live);
  largest_first(p.requested);
  return p;
}

}  // namespace

TimelinePeak live_peak(const StepTimeline& tl) {
  std::vector<int64_t> bytes(tl.tensors.size(), 0);
  std::vector<char> live(tl.tensors.size(), 0);
  int64_t now = 0, best = -1;
  size_t at = 0;
  for (size_t i = 0; i < tl.events.size(); ++i) {
    const TimelineEvent& e = tl.events[i];
    const size_t t = size_t(e.tensor);
    bytes[t] = tl.tensors[t].bytes;
    if (e.alloc != bool(live[t])) now += e.alloc ? bytes[t] : -bytes[t];
    live[t] = e.alloc ? 1 : 0;
    if (now > best) best = now, at = i;
  }
  return peak_at(tl, bytes, at, std::max<int64_t>(0, best));
}

TimelineReplay replay_timeline(const StepTimeline& tl, const AllocatorConfig& cfg) {
  CachingAllocator a(cfg);
  std::vector<int> handle(tl.tensors.size(), -1);
  std::vector<int64_t> block(tl.tensors.size(), 0);
  int64_t best_alloc = -1, best_res = -1;
  size_t at_alloc = 0, at_res = 0;
  for (size_t i = 0; i < tl.events.size(); ++i) {
    const TimelineEvent& e = tl.events[i];
    const size_t t = size_t(e.tensor);
    if (e.alloc) {
      handle[t] = a.malloc(tl.tensors[t].bytes, tl.tensors[t].stream);
      block[t] = a.block_bytes(handle[t]);
    } else if (handle[t] >= 0) {
      a.free(handle[t]);
      handle[t] = -1;
    }
    if (a.allocated() > best_alloc) best_alloc = a.allocated(), at_alloc = i;
    if (a.reserved() > best_res) best_res = a.reserved(), at_res = i;
  }
  TimelineReplay r;
  r.allocated = peak_at(tl, block, at_alloc, a.peak_allocated());
  r.reserved = peak_at(tl, block, at_res, a.peak_reserved());
  for (int s : {kDefaultStream, kAllGatherStream, kReduceScatterStream})
    r.reserved_by_stream.push_back({s, a.reserved_on(s)});
  r.segments = a.segments();
  r.out_of_memory = a.out_of_memory();
  return r;
}

}  // namespace muonplan
