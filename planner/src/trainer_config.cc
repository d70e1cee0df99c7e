// Plan JSON to trainer TOML. JSON numbers, booleans, strings and arrays print as valid TOML
// values (nlohmann writes 0.0, 1e-08, "text", [1.0,2.0]), so values are copied, not retyped.
#include "muonplan/trainer_config.h"

#include <sstream>

namespace muonplan {
namespace {

using json = nlohmann::json;

// Arrays with ", " between items (nlohmann writes none), everything else as JSON writes it.
std::string toml_value(const json& v) {
  if (!v.is_array()) return v.dump();
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + toml_value(v[i]);
  return out + "]";
}

class Toml {
 public:
  void comment(const std::string& text) { out_ << "# " << text << "\n"; }
  void table(const std::string& name) { out_ << "\n[" << name << "]\n"; }
  void key(const std::string& name, const json& value, const std::string& note = "") {
    std::string line = name + " = " + toml_value(value);
    if (!note.empty()) {
      line.resize(std::max<size_t>(line.size() + 2, 34), ' ');
      line += "# " + note;
    }
    out_ << line << "\n";
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

}  // namespace

std::string trainer_config_toml(const json& plan) {
  const json& layout = plan.at("layout");
  const json& opt = plan.at("optimizer_config");
  const std::string offload = plan.at("offload");
  const std::string optimizer = plan.at("optimizer");
  const int world = plan.at("world_size");
  const int fsdp = layout.at("fsdp"), cp = layout.at("cp");

  Toml t;
  t.comment("Trainer settings implied by the muonplan plan for " +
            plan.at("model").get<std::string>() + " on " + plan.at("topology").get<std::string>() +
            (plan.at("fits").get<bool>() ? "" : " (NO FIT)") + ".");
  t.comment("decision: " + plan.at("decision").at("reason").get<std::string>());

  t.table("deployment");
  t.key("num_nodes", plan.at("nodes"));
  t.key("gpus_per_node", plan.at("gpus_per_node"));
  t.key("world_size", world);

  t.table("model");
  t.key("offload", offload, "none | optimizer | full");
  t.key("fsdp_cpu_offload", offload == "full", "prime-rl: params, grads, optimizer state on host");
  t.key("optim_cpu_offload", offload == "optimizer", "prime-rl: optimizer state on host");
  t.key("dp_replicate", world / fsdp, "world / fsdp: replicas of the shard group (HSDP)");
  t.key("dp_shard", fsdp / cp, "fsdp / cp");
  t.key("cp", cp);
  t.key("ep", layout.at("ep"));

  t.table("optim");
  t.key("type", optimizer);
  const json& adamw = opt.at("adamw");
  if (optimizer == "adamw") {  // every parameter takes the AdamW settings
    t.key("lr", adamw.at("lr"));
    t.key("weight_decay", adamw.at("weight_decay"));
    t.key("betas1", adamw.at("beta1"));
    t.key("betas2", adamw.at("beta2"));
    t.key("eps", adamw.at("eps"));
    return t.str();
  }
  t.key("lr", opt.at("lr"));
  t.key("weight_decay", opt.at("weight_decay"));
  if (optimizer == "muon") {
    t.key("mu", opt.at("momentum"), "Muon momentum");
    t.key("nesterov", opt.at("nesterov"));
    t.key("bf16_momentum", opt.at("bf16_momentum"));
    t.key("update_rms", opt.at("update_rms"));
    t.key("ns_schedule", opt.at("ns_schedule"));
    t.key("newton_schulz_coefficients", opt.at("newton_schulz_coefficients"),
          "(a, b, c) per iteration");
    t.key("betas1", adamw.at("beta1"), "AdamW on the non-Muon params");
    t.key("betas2", adamw.at("beta2"));
    t.key("adamw_lr", adamw.at("lr"));
    t.key("adamw_weight_decay", adamw.at("weight_decay"));
  }
  return t.str();
}

}  // namespace muonplan
