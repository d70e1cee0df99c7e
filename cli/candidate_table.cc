// The candidate table (candidate_table.h).
#include "candidate_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <vector>

#include "muonplan/base/units.h"

namespace muonplan::cli {
namespace {

// The figures a row prints, as printed: candidates with equal rows tie.
// `scale` is 1 for GiB, 1024 when the table is in MiB.
std::string figures(const Candidate& c, double scale) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%-4s  %12.1f  %14.1f  %10.3f  %10.2f  %s", c.fits ? "yes" : "no",
                c.gpu_peak_gib * scale, c.host_ram_per_node_gib * scale, c.step_s, c.gpu_seconds,
                margin_text(c.fits, c.fit_margin).c_str());
  return buf;
}

// "fsdp=8,cp=1,ep=2" as its fields, in order.
std::vector<std::pair<std::string, std::string>> fields(const std::string& layout) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t at = 0;
  while (at < layout.size()) {
    const size_t comma = std::min(layout.find(',', at), layout.size());
    const std::string part = layout.substr(at, comma - at);
    const size_t eq = part.find('=');
    out.push_back({part.substr(0, eq), eq == std::string::npos ? "" : part.substr(eq + 1)});
    at = comma + 1;
  }
  return out;
}

// One label for tied layouts: the fields they share as written, the one that differs as
// "first..last" of its values in the search's order.
std::string tied_label(const std::vector<const Candidate*>& group) {
  const auto first = fields(group.front()->layout), last = fields(group.back()->layout);
  std::string out;
  for (size_t i = 0; i < first.size(); ++i) {
    const bool same = i < last.size() && first[i].second == last[i].second;
    out += (i ? "," : "") + first[i].first + "=" + first[i].second +
           (same || i >= last.size() ? "" : ".." + last[i].second);
  }
  return out;
}

// Of the rows of one node count and offload mode, the one a short table keeps: the chosen
// candidate's, else the fitting one with the fewest GPU-seconds, else the one that misses by
// least. The others are counted on its line.
bool better(const Candidate& a, const Candidate& b) {
  if (a.fits != b.fits) return a.fits;
  return a.fits ? a.gpu_seconds < b.gpu_seconds : a.fit_margin > b.fit_margin;
}

struct Folded {
  std::vector<size_t> print_as;         // per row: the row printed in its place (npos: none)
  std::vector<int> others, others_fit;  // per printed row: the rows folded into it
};

Folded unfolded(size_t n) {
  Folded f{std::vector<size_t>(n), std::vector<int>(n, 0), std::vector<int>(n, 0)};
  for (size_t i = 0; i < n; ++i) f.print_as[i] = i;
  return f;
}

// The best row of each node count and mode printed where that group's first row stood.
Folded fold_layouts(const std::vector<std::vector<const Candidate*>>& rows,
                    const std::function<bool(const std::vector<const Candidate*>&)>& chosen) {
  Folded f = unfolded(rows.size());
  std::map<std::string, std::pair<size_t, size_t>> group;  // key -> (first row, best row)
  auto key = [](const Candidate& c) {
    return std::to_string(c.nodes) + "/" + to_string(c.offload);
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    const Candidate& c = *rows[i].front();
    if (!c.evaluated) continue;
    const auto [it, fresh] = group.emplace(key(c), std::pair{i, i});
    if (fresh) continue;
    const auto& held = rows[it->second.second];
    if (!chosen(held) && (chosen(rows[i]) || better(c, *held.front()))) it->second.second = i;
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const Candidate& c = *rows[i].front();
    if (!c.evaluated) continue;
    const auto [first, best] = group.at(key(c));
    f.print_as[i] = i == first ? best : std::string::npos;
    if (i == best) continue;
    f.others[best] += int(rows[i].size());
    for (const Candidate* g : rows[i]) f.others_fit[best] += g->fits;
  }
  return f;
}

// 1024 (the table in MiB) when every evaluated figure is under 1 GiB (a small model's 20 MiB
// would print as 0.0 GiB), else 1.
double memory_scale(const Plan& plan) {
  double largest_gib = 0;
  for (const Candidate& c : plan.candidates) {
    if (c.evaluated) largest_gib = std::max({largest_gib, c.gpu_peak_gib, c.host_ram_per_node_gib});
  }
  return largest_gib < 1 ? 1024 : 1;
}

// Evaluated candidates of one node count and mode with equal figures: one row, where the
// first of them stood.
std::vector<std::vector<const Candidate*>> tied_rows(const Plan& plan, double scale) {
  std::vector<std::vector<const Candidate*>> rows;
  std::map<std::string, size_t> row_of;
  for (const Candidate& c : plan.candidates) {
    const std::string key =
        std::to_string(c.nodes) + "/" + to_string(c.offload) + "/" + figures(c, scale);
    const auto it = c.evaluated ? row_of.find(key) : row_of.end();
    if (it != row_of.end()) {
      rows[it->second].push_back(&c);
      continue;
    }
    if (c.evaluated) row_of[key] = rows.size();
    rows.push_back({&c});
  }
  return rows;
}

}  // namespace

std::string margin_text(bool fits, double margin) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s by %.0f%%", fits ? "fits" : "misses", 100 * std::abs(margin));
  return buf;
}

std::string verdict_text(const Prediction& p) {
  if (p.fit_verdict() != Prediction::Verdict::tight) return margin_text(p.fits(), p.fit_margin());
  char buf[160];
  if (p.gpu_headroom_used_bytes() <= 0) {
    std::snprintf(buf, sizeof buf,
                  "tight: within the limits, but host RAM is %.0f GiB into its %.0f%% headroom",
                  (p.host_bytes() - p.host_limit_bytes * (1 - p.host_headroom)) / kGiB,
                  100 * p.host_headroom);
    return buf;
  }
  std::snprintf(buf, sizeof buf,
                "tight: within the limits, but %.2f GiB into the %.0f%% GPU headroom (%.2f GiB "
                "of the GPU left)",
                p.gpu_headroom_used_bytes() / kGiB, 100 * p.gpu_headroom,
                (p.gpu_limit_bytes - p.gpu_peak_bytes()) / kGiB);
  return buf;
}

void print_candidates(const Plan& plan, bool all_layouts, const char* rank) {
  const PlanOptions& o = plan.options;
  const std::string chosen_layout = to_string(o.layout);
  // The layout column appears when the search tried more than one layout.
  bool layouts_vary = false;
  for (const Candidate& c : plan.candidates)
    layouts_vary = layouts_vary || (!c.layout.empty() && c.layout != chosen_layout);
  const double scale = memory_scale(plan);
  const bool mib = scale != 1;
  const std::vector<std::vector<const Candidate*>> rows = tied_rows(plan, scale);
  const auto is_chosen = [&](const std::vector<const Candidate*>& group) {
    for (const Candidate* g : group) {
      if (g->nodes == o.nodes && g->offload == o.offload && g->layout == chosen_layout) return true;
    }
    return false;
  };
  const Folded folded =
      all_layouts || !layouts_vary ? unfolded(rows.size()) : fold_layouts(rows, is_chosen);
  int folded_rows = 0;
  const std::string unit = mib ? "MiB" : "GiB";
  const std::string peak = (std::string(rank) == "GPU" ? "GPU peak " : "peak ") + unit;
  const std::string seconds = std::string(rank) + "-s";
  std::printf("%5s  %s%-9s  %-4s  %12s  %14s  %10s  %10s  %s\n", "nodes",
              layouts_vary ? "layout                  " : "", "offload", "fits", peak.c_str(),
              ("host " + unit + "/node").c_str(), "step s", seconds.c_str(), "margin");
  bool collapsed = false;
  for (size_t i = 0; i < rows.size(); ++i) {
    const size_t shown = folded.print_as[i];
    if (shown == std::string::npos) {
      ++folded_rows;
      continue;
    }
    const std::vector<const Candidate*>& group = rows[shown];
    const Candidate& c = *group.front();
    // Candidates not evaluated for one reason, in a row (the search's budget spent, bounds that
    // print alike, a layout no world of the count takes): one row, a..b, with how many when
    // they share one node count.
    size_t run_end = i + 1;
    while (!c.evaluated && run_end < rows.size() && !rows[run_end].front()->evaluated &&
           rows[run_end].front()->note == c.note)
      ++run_end;
    const Candidate& run_last = *rows[run_end - 1].front();
    if (run_end - i > 1) {
      bool one_mode = true;
      for (size_t k = i; k < run_end; ++k)
        one_mode = one_mode && rows[k].front()->offload == c.offload;
      const bool one_count = run_last.nodes == c.nodes;
      const std::string span =
          one_count ? std::to_string(c.nodes)
                    : std::to_string(c.nodes) + ".." + std::to_string(run_last.nodes);
      const std::string count =
          one_count ? " (" + std::to_string(run_end - i) + " candidates)" : "";
      std::printf("%5s  %s%-9s  %-4s  %s%s\n", span.c_str(),
                  layouts_vary ? "-                       " : "",
                  one_mode ? to_string(c.offload) : "all", "-", c.note.c_str(), count.c_str());
      i = run_end - 1;
      continue;
    }
    const bool chosen = is_chosen(group);
    collapsed = collapsed || group.size() > 1;
    char layout[48] = "";
    if (layouts_vary) {
      const std::string label = c.layout.empty()   ? "-"
                                : group.size() > 1 ? tied_label(group)
                                                   : c.layout;
      std::snprintf(layout, sizeof layout, "%-22s  ", label.c_str());
    }
    if (!c.evaluated) {
      std::printf("%5d  %s%-9s  %-4s  %s\n", c.nodes, layout, to_string(c.offload), "-",
                  c.note.c_str());
      continue;
    }
    std::string others;
    if (folded.others[shown]) {
      others = "  (+" + std::to_string(folded.others[shown]) + " other layout" +
               (folded.others[shown] > 1 ? "s" : "") + ", " +
               std::to_string(folded.others_fit[shown]) + " fit)";
    }
    std::printf("%5d  %s%-9s  %s%s%s\n", c.nodes, layout, to_string(c.offload),
                figures(c, scale).c_str(), chosen ? "  <- chosen" : "", others.c_str());
  }
  if (folded_rows) {
    std::printf(
        "(one row per node count and offload mode: the chosen layout, else the fitting one with "
        "the fewest GPU-seconds, else the closest; --explain or --json list all %zu candidates)\n",
        plan.candidates.size());
  }
  if (collapsed) {
    std::printf(
        "(a range such as ep=1..8: layouts that tie on every figure, one row; the tie is "
        "broken by the first, the smallest)\n");
  }
}

}  // namespace muonplan::cli
