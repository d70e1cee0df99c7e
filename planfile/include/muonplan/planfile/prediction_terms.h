#pragma once
// The one table of a prediction's term lists (issue 37 item 2): which list of Prediction it is,
// its key under plan.json's `predicted.breakdown`, the label people read, and its unit. The plan
// file (plan_json.cc), `plan --explain` (cmd_plan.cc) and the reports (report.py and
// report_markdown.py, which read the table from plan.json's `terms`) all iterate it, so a new
// term list is one line here.

#include <vector>

#include "muonplan/planfile/prediction.h"

namespace muonplan {

// What a list's terms add up to: each GPU group is a step of allocated -> reserved -> peak
// (Prediction::gpu_peak_bytes); `hidden` terms run under compute and are in no sum; `between`
// terms run between two steps (a loop iteration is the training step and them).
enum class TermSum { gpu_allocated, gpu_reserved, gpu_peak, host, traffic, step, hidden, between };
const char* to_string(TermSum s);

struct TermList {
  TermSum sum;
  const char* key;    // under predicted.breakdown; its terms' value field is named `unit`
  const char* label;  // what plan --explain and report.md title the list
  const char* unit;   // "gib" (2^30 bytes), "gb" (1e9 bytes) or "s"
  std::vector<Term> Prediction::*list;
};

// In the order of the sums: plan --explain prints each GPU sum's total after its last list.
inline const TermList kTermLists[] = {
    {TermSum::gpu_allocated, "gpu_persistent_gib", "GPU persistent", "gib",
     &Prediction::gpu_persistent_bytes},
    {TermSum::gpu_allocated, "gpu_transient_gib", "GPU step transient", "gib",
     &Prediction::gpu_transient_bytes},
    {TermSum::gpu_allocated, "gpu_workload_gib", "GPU workload", "gib",
     &Prediction::gpu_workload_bytes},
    {TermSum::gpu_allocated, "gpu_runtime_gib", "GPU runtime allocations", "gib",
     &Prediction::gpu_runtime_bytes},
    {TermSum::gpu_reserved, "gpu_reserve_gib", "GPU allocator reserve (reserved - allocated)",
     "gib", &Prediction::gpu_reserve_bytes},
    {TermSum::gpu_peak, "gpu_fixed_gib", "GPU outside the allocator", "gib",
     &Prediction::gpu_fixed_bytes},
    {TermSum::host, "host_per_node_gib", "host RAM per node", "gib",
     &Prediction::host_bytes_per_node},
    {TermSum::traffic, "traffic_per_gpu_gb", "traffic per GPU per step", "gb",
     &Prediction::comm_bytes},
    {TermSum::step, "optimizer_step_s", "optimizer step", "s", &Prediction::step_phases_s},
    {TermSum::step, "training_step_s", "training step", "s", &Prediction::training_terms_s},
    {TermSum::hidden, "training_hidden_s", "training step, under compute (not in the sum)", "s",
     &Prediction::training_hidden_s},
    {TermSum::between, "between_steps_s",
     "between training steps (outside the trainer's time/step)", "s", &Prediction::between_steps_s},
};

// Bytes or seconds per unit of the list's printed figures.
double unit_scale(const char* unit);

}  // namespace muonplan
