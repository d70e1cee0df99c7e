#include "muonplan/planner/json_forms.h"

#include <string>
#include <utility>

#include "muonplan/base/error.h"

namespace muonplan {

using json = nlohmann::json;

json inventory_to_json(const ParamInventory& inv, bool include_mtp, bool tensors) {
  const InventorySummary s = inv.summarize(include_mtp);
  json j;
  j["model"] = inv.model_name;
  j["params_total"] = s.params_total;
  j["params_muon"] = s.params_muon;
  j["params_adamw"] = s.params_adamw;
  j["params_mtp"] = inv.mtp_params();
  j["muon_matrices"] = s.muon_matrices;
  j["tensors"] = s.tensors;
  j["shape_groups"] = json::array();
  for (const ShapeGroup& g : s.shape_groups) {
    j["shape_groups"].push_back({{"rows", g.rows}, {"cols", g.cols}, {"count", g.count}});
  }
  if (tensors) {
    j["tensor_list"] = json::array();
    for (const ParamTensor& t : inv.tensors) {
      json parts = json::array();
      for (const Partition& p : t.partitions) parts.push_back({{"name", p.name}, {"rows", p.rows}});
      j["tensor_list"].push_back({{"name", t.name},
                                  {"shape", t.shape},
                                  {"dtype", "bf16"},
                                  {"rule", to_string(t.rule)},
                                  {"partitions", parts},
                                  {"stack_dim", t.stack_dim},
                                  {"mtp", t.mtp}});
    }
  }
  return j;
}

json ns_cost_to_json(const NsCost& c) {
  json j = {{"ms", c.total_s * 1e3},
            {"flops", c.flops},
            {"tflops_per_s", c.flops / c.total_s / 1e12},
            {"normalize_ms", c.normalize_s * 1e3},
            {"gemm_ms", c.gemm_s * 1e3},
            {"iterations", c.iterations}};
  for (const GemmCost& g : c.gemms) {
    j["gemms_per_iteration"].push_back({{"what", g.what},
                                        {"m", g.m},
                                        {"n", g.n},
                                        {"k", g.k},
                                        {"ms", g.total_s * 1e3},
                                        {"compute_ms", g.compute_s * 1e3},
                                        {"memory_ms", g.memory_s * 1e3},
                                        {"wave_efficiency", g.wave_efficiency},
                                        {"k_efficiency", g.k_efficiency}});
  }
  return j;
}

void check_ns_shape(int64_t batch, int64_t rows, int64_t cols) {
  for (auto [name, v] : {std::pair{"--batch", batch}, {"--rows", rows}, {"--cols", cols}}) {
    if (v <= 0) throw InputError({}, name, "must be positive, got " + std::to_string(v));
  }
}

}  // namespace muonplan
