// The LoRA inventory (lora.h): prime-rl's target matching and the adapters' shapes.
#include "muonplan/planner/lora.h"

#include <algorithm>
#include <sstream>

#include "muonplan/base/error.h"
#include "muonplan/planfile/plan_checks.h"

namespace muonplan {

const std::vector<std::string>& lora_default_targets() {
  // prime-rl's LoRAConfig.target_modules; "experts" adapts every routed expert's projections
  // (MultiLoRAGroupedExperts: A [E, rank, in], B [E, out, rank] for w1, w2, w3);
  // fc1/fc2_latent_proj are NemotronH's and match nothing in the models muonplan bundles.
  static const std::vector<std::string> targets = {
      "q_proj",  "k_proj",    "v_proj",  "o_proj",          "gate_proj",
      "up_proj", "down_proj", "experts", "fc1_latent_proj", "fc2_latent_proj"};
  return targets;
}

std::vector<std::string> lora_targets_or(const LoraConfig& lora) {
  return lora.target_modules.empty() ? lora_default_targets() : lora.target_modules;
}

double lora_alpha_or(const LoraConfig& lora) {
  return lora.alpha > 0 ? lora.alpha : kLoraDefaultAlpha;
}

std::vector<std::string> parse_lora_targets(const std::string& text, const std::string& field) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string name;
  while (std::getline(in, name, ',')) {
    if (name.empty()) throw InputError({}, field, "empty module name in '" + brief(text) + "'");
    // As the plan loader reads target_modules back (execute refused what plan wrote).
    if (const std::string why = text_problem(name); !why.empty()) throw InputError({}, field, why);
    if (name.find_first_of(".*+?^$[]{}|()\\") != std::string::npos) {
      throw InputError({}, field,
                       "'" + brief(name) +
                           "' is a regex pattern; muonplan matches plain module names "
                           "(q_proj, experts, ...) only");
    }
    out.push_back(name);
  }
  if (out.empty()) throw InputError({}, field, "expected module names a,b,c");
  return out;
}

void check_lora(const LoraConfig& lora, OptimizerKind optimizer, const std::string& field) {
  if (lora.rank <= 0) return;
  if (optimizer == OptimizerKind::muon) {
    throw InputError({}, field,
                     "Muon on LoRA adapters is not planned (prime-rl's LoRA runs train the "
                     "adapters with AdamW); plan LoRA with --optimizer adamw");
  }
  if (lora.adapters < 1) throw InputError({}, "--lora-adapters", "must be at least 1");
  if (lora.adapters > kMaxLoraAdapters)
    throw InputError({}, "--lora-adapters", lora_adapters_message(lora.adapters));
}

std::string lora_adapters_message(int64_t adapters) {
  return "at most " + std::to_string(kMaxLoraAdapters) +
         " adapter slots are planned (each is a copy of every adapter tensor: planning time "
         "grows with them), got " +
         std::to_string(adapters);
}

bool lora_offload_refused(const LoraConfig& lora, OffloadMode mode) {
  return lora.rank > 0 && lora.adapters > 1 && mode == OffloadMode::optimizer;
}

namespace {

// prime-rl's match of a plain name: any component of the module's path equals it.
bool component_matches(const std::string& module, const std::vector<std::string>& targets) {
  std::stringstream in(module);
  std::string part;
  while (std::getline(in, part, '.')) {
    if (std::find(targets.begin(), targets.end(), part) != targets.end()) return true;
  }
  return false;
}

std::string module_of(const std::string& tensor) {
  const std::string suffix = ".weight";
  const bool w = tensor.size() > suffix.size() &&
                 tensor.compare(tensor.size() - suffix.size(), suffix.size(), suffix) == 0;
  return w ? tensor.substr(0, tensor.size() - suffix.size()) : tensor;
}

// A and B of one slot for a base matrix of `rows` out rows: [rank, in] and [rows, rank], with
// the stack dimension of an expert stack in front.
void add_pair(ParamInventory& inv, const ParamTensor& base, const std::string& module, int64_t rows,
              int64_t rank, int64_t slot) {
  ParamTensor a = base;
  a.rule = UpdateRule::adamw;
  a.partitions.clear();
  ParamTensor b = a;
  const bool stack = base.stack_dim == 0;
  const std::vector<int64_t> lead =
      stack ? std::vector<int64_t>{base.shape[0]} : std::vector<int64_t>{};
  a.shape = lead;
  a.shape.insert(a.shape.end(), {rank, base.cols()});
  b.shape = lead;
  b.shape.insert(b.shape.end(), {rows, rank});
  a.name = module + ".lora_A." + std::to_string(slot);
  b.name = module + ".lora_B." + std::to_string(slot);
  inv.tensors.push_back(std::move(a));
  inv.tensors.push_back(std::move(b));
}

// Targets that match no linear module give a plan that trains nothing (0 tensors, "fits"):
// refused, naming what the model's modules are called.
[[noreturn]] void refuse_adapting_nothing(const ParamInventory& inv,
                                          const std::vector<std::string>& targets) {
  std::vector<std::string> names;
  auto add = [&](const std::string& n) {
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  };
  for (const ParamTensor& t : inv.frozen) {
    const std::string module = module_of(t.name);
    if (t.shape.size() < 2 || module == "model.embed_tokens") continue;
    add(module.substr(module.rfind('.') + 1));
    for (const Partition& p : t.partitions) add(p.name + "_proj");
  }
  std::string asked, known;
  for (const std::string& n : targets) asked += (asked.empty() ? "" : ",") + n;
  for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
  throw InputError({}, "--lora-targets",
                   "'" + printable(brief(asked)) +
                       "' adapts nothing: no linear module of the model has a name component "
                       "equal to one of them (names match exactly, case included); its modules: " +
                       known);
}

}  // namespace

void apply_lora(ParamInventory& inv, const LoraConfig& lora) {
  if (lora.rank <= 0) return;
  const std::vector<std::string> targets = lora_targets_or(lora);
  inv.frozen = std::move(inv.tensors);
  inv.tensors.clear();
  for (int64_t slot = 0; slot < lora.adapters; ++slot) {
    for (const ParamTensor& t : inv.frozen) {
      // Linear layers only: matrices and expert stacks; the token embedding is a lookup.
      if (t.shape.size() < 2 || module_of(t.name) == "model.embed_tokens") continue;
      const std::string module = module_of(t.name);
      const bool whole = component_matches(module, targets);
      if (t.partitions.empty()) {
        if (whole) add_pair(inv, t, module, t.rows(), lora.rank, slot);
        continue;
      }
      // A fused matrix (qkv_proj, gate_up_proj) is the separate modules prime-rl adapts, each
      // with its own A and B: partition "q" is q_proj, "gate" is gate_proj (w1 of an expert).
      for (const Partition& p : t.partitions) {
        if (whole || component_matches(p.name + "_proj", targets))
          add_pair(inv, t, module + "." + p.name, p.rows, lora.rank, slot);
      }
    }
  }
  if (inv.tensors.empty()) refuse_adapting_nothing(inv, targets);
}

}  // namespace muonplan
