// The candidate table `muonplan plan` prints: one row per node count, offload mode and layout
// the search evaluated, rows that tie on every printed figure collapsed into one.
#pragma once

#include <string>

#include "muonplan/planner/plan.h"

namespace muonplan::cli {

// "fits by 12%" / "misses by 5%": the margin the fit decision left (Prediction::fit_margin).
std::string margin_text(bool fits, double margin);
// The chosen plan's fit verdict (Prediction::fit_verdict): margin_text for fits and misses;
// for a tight plan, how far into the headroom it is.
std::string verdict_text(const Prediction& p);

// Candidates of the same node count and offload mode whose every printed figure is equal (on a
// step without a workload `ep` changes nothing) print as one row naming the range of the layout
// field that differs ("fsdp=8,cp=1,ep=1..8"); the search broke the tie by the smallest, and a
// line under the table says so. Unless `all_layouts`, the rows of one node count and mode keep
// only the best layout's (the chosen one, else the fitting one with the fewest GPU-seconds,
// else the closest to fitting), counting the others on its line: a large model's search tries
// dozens of layouts per count (issue 36 item 9), and --explain lists every one.
// `rank` names what a rank is ("GPU", or "rank" on a topology of CPU ranks); memory is in MiB
// when every figure is under 1 GiB.
void print_candidates(const Plan& plan, bool all_layouts, const char* rank);

}  // namespace muonplan::cli
