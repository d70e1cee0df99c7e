#include "muonplan/planfile/param_inventory.h"

#include <map>
#include <utility>

namespace muonplan {

const char* to_string(UpdateRule rule) {
  return enum_name(kUpdateRuleNames, rule);
}

int64_t ParamTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<Partition> ParamTensor::muon_partitions() const {
  if (!partitions.empty()) return partitions;
  return {Partition{"", rows()}};
}

int64_t ParamTensor::muon_matrix_count() const {
  if (rule != UpdateRule::muon) return 0;
  return stack_count() * static_cast<int64_t>(muon_partitions().size());
}

InventorySummary ParamInventory::summarize(bool include_mtp) const {
  InventorySummary s;
  std::map<std::pair<int64_t, int64_t>, int64_t> groups;
  for (const ParamTensor& t : tensors) {
    if (t.mtp && !include_mtp) continue;
    const int64_t n = t.numel();
    s.params_total += n;
    ++s.tensors;
    if (t.rule == UpdateRule::adamw) {
      s.params_adamw += n;
      continue;
    }
    s.params_muon += n;
    s.muon_matrices += t.muon_matrix_count();
    for (const Partition& part : t.muon_partitions()) {
      groups[{part.rows, t.cols()}] += t.stack_count();
    }
  }
  for (const auto& [shape, count] : groups) {
    s.shape_groups.push_back({shape.first, shape.second, count});
  }
  return s;
}

int64_t ParamInventory::mtp_params() const {
  int64_t n = 0;
  for (const ParamTensor& t : tensors) n += t.mtp ? t.numel() : 0;
  return n;
}

}  // namespace muonplan
