#include "spec/model_limits.h"

#include "muonplan/base/units.h"

#include "muonplan/base/error.h"
#include "muonplan/planner/inventory.h"

namespace muonplan::detail {

int64_t max_size_for(const std::string& key) {
  if (key == "num_layers" || key == "num_hidden_layers") return 10'000;
  if (key == "mtp_layers" || key == "num_nextn_predict_layers") return 100;
  if (key == "num_experts" || key == "n_routed_experts") return 100'000;
  return kMaxTensorDim;  // any width: hidden, ffn, vocab, heads, ranks
}

void check_model_totals(const ModelSpec& spec, const std::string& path) {
  // Listing tensors costs microseconds each: 2M took 6 s to inspect in a release build and
  // over 100 s under the fuzzing sanitizers. Kimi-K2 with unstacked experts has 70k.
  constexpr int64_t kMaxExpertTensors = 500'000;
  const int64_t experts_tensors =
      spec.storage.stacked_experts ? 0
                                   : spec.moe.num_experts * 3 * (spec.num_layers + spec.mtp_layers);
  if (experts_tensors > kMaxExpertTensors) {
    throw InputError({path, 0, 0}, "moe.num_experts",
                     "unstacked experts make " + std::to_string(experts_tensors) +
                         " tensors, more than muonplan plans for (" +
                         std::to_string(kMaxExpertTensors) + ")");
  }
  // Field bounds keep every dimension below 2^63 (at most a few products of two fields, 1e8
  // each), but not every element count: [1e5, 1e8, 1e8] overflows int64, so count in doubles
  // here; a spec that passes has every tensor's numel() below 1e15.
  double total = 0;
  for (const ParamTensor& t : build_inventory(spec).tensors) {
    double numel = 1;
    for (int64_t d : t.shape) {
      if (d > kMaxTensorDim) {  // a product of two fields (heads x head_dim)
        throw InputError({path, 0, 0}, "model",
                         "tensor " + t.name + " has a dimension of " + std::to_string(d) +
                             ", more than muonplan plans for (" + std::to_string(kMaxTensorDim) +
                             ")");
      }
      numel *= double(d);
    }
    total += numel;
  }
  if (total > kMaxParams) {
    throw InputError({path, 0, 0}, "model",
                     std::to_string(static_cast<long long>(total / 1e12)) +
                         "T parameters, more than muonplan plans for (1000T)");
  }
}

}  // namespace muonplan::detail
