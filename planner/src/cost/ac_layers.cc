// Activation checkpointing per decoder layer (ac_layers.h).
#include "cost/ac_layers.h"

#include <algorithm>
#include <set>

#include "muonplan/base/error.h"

namespace muonplan {

LayerAc layer_ac(const Workload& w, int64_t layer) {
  if (!w.ac_full && !w.ac_selective) return LayerAc::none;
  if (layer % std::max<int64_t>(1, w.ac_freq) != 0) return LayerAc::none;
  return w.ac_selective ? LayerAc::selective : LayerAc::full;
}

std::vector<std::string> ac_targets(const Workload& w) {
  if (w.ac_targets.empty()) return {kDefaultAcTarget};
  return w.ac_targets;
}

bool ac_target_on(const Workload& w, std::string_view target) {
  if (!w.ac_selective) return false;
  const std::vector<std::string> t = ac_targets(w);
  return std::find(t.begin(), t.end(), target) != t.end();
}

bool recomputed(const Workload& w, int64_t layer, const ActivationTensor& a) {
  switch (layer_ac(w, layer)) {
    case LayerAc::full:
      return true;
    case LayerAc::selective:
      return a.ac_target && ac_target_on(w, a.ac_target);
    case LayerAc::none:
      break;
  }
  return false;
}

std::vector<std::string> supported_ac_targets(const ModelSpec& s, int64_t layer) {
  std::vector<std::string> v = {"norm", "attn_proj"};
  if (s.attention.kind == AttentionKind::mla) v.push_back("mla_up_proj");
  v.push_back(s.is_moe_layer(layer) ? "routed_experts" : "mlp");
  return v;
}

void check_ac_targets(const ModelSpec& s, const Workload& w, int64_t layers) {
  if (!w.ac_selective) return;
  std::set<std::string> supported;
  for (int64_t i = 0; i < layers; ++i) {
    if (layer_ac(w, i) != LayerAc::selective) continue;
    for (const std::string& t : supported_ac_targets(s, i)) supported.insert(t);
  }
  std::string list;
  for (const std::string& t : supported) list += (list.empty() ? "" : ", ") + t;
  for (const std::string& t : ac_targets(w)) {
    const bool known = std::any_of(std::begin(kAcTargetNames), std::end(kAcTargetNames),
                                   [&](const char* n) { return t == n; });
    if (!known) {
      std::string all;
      for (const char* n : kAcTargetNames) all += (all.empty() ? "" : ", ") + std::string(n);
      throw InputError({}, "--ac-targets",
                       "unknown selective AC target '" + t + "'; prime-rl's: " + all);
    }
    if (!supported.count(t))
      throw InputError({}, "--ac-targets",
                       "selective AC target " + t +
                           " is not supported by the checkpointed layers of " + s.name +
                           " (prime-rl's apply_ac raises ValueError); supported: " + list);
  }
}

bool offloads_layer_inputs(const Workload& w) {
  return w.ac_full && w.ac_offload && w.ac_freq == 1;
}

bool offload_copies_on_compute_stream(const Workload& w) {
  return offloads_layer_inputs(w) && !w.trainer.empty();
}

std::vector<double> ac_offload_host_buffers(const ModelSpec& s, const PlanOptions& o) {
  if (!o.workload || !offloads_layer_inputs(*o.workload)) return {};
  const int64_t layers = s.num_layers + (o.include_mtp ? s.mtp_layers : 0);
  return std::vector<double>(size_t(layers),
                             hidden_state_bytes(s, micro_step_tokens(*o.workload, o.layout)));
}

}  // namespace muonplan
