#include "model_limits.h"

#include "muonplan/error.h"
#include "muonplan/inventory.h"

namespace muonplan::detail {

int64_t max_size_for(const std::string& key) {
  if (key == "num_layers" || key == "num_hidden_layers") return 10'000;
  if (key == "mtp_layers" || key == "num_nextn_predict_layers") return 100;
  if (key == "num_experts" || key == "n_routed_experts") return 100'000;
  return 100'000'000;  // any width: hidden, ffn, vocab, heads, ranks
}

void check_model_totals(const ModelSpec& spec, const std::string& path) {
  const int64_t experts_tensors =
      spec.storage.stacked_experts ? 0 : spec.moe.num_experts * 3 * (spec.num_layers + spec.mtp_layers);
  if (experts_tensors > 2'000'000) {
    throw InputError({path, 0, 0}, "moe.num_experts",
                     "unstacked experts make " + std::to_string(experts_tensors) +
                         " tensors, more than muonplan plans for (2000000)");
  }
  // Field bounds keep every product below 2^63: 1e8 * 1e8 * 1e5 < 9.2e18.
  double total = 0;
  for (const ParamTensor& t : build_inventory(spec).tensors) total += double(t.numel());
  if (total > 1e15) {
    throw InputError({path, 0, 0}, "model",
                     std::to_string(static_cast<long long>(total / 1e12)) +
                         "T parameters, more than muonplan plans for (1000T)");
  }
}

}  // namespace muonplan::detail
