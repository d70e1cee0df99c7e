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
  } else {
    t.key("lr", opt.at("lr"));
    t.key("weight_decay", opt.at("weight_decay"));
  }
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

  // The rest of the plan's inputs, for `muonplan plan --trainer-config` to plan it again.
  const json w = plan.value("workload", json());
  if (!w.is_null()) {
    t.table("workload");
    t.key("seq_len", w.at("seq_len"));
    t.key("tokens_per_step", w.at("tokens_per_step"), "global batch");
    t.key("micro_batch_seqs", w.at("micro_batch_seqs"), "per rank per micro step");
    t.key("ac", w.at("ac"), "activation checkpointing: full | none");
    t.key("ac_offload", w.at("ac_offload"));
    t.key("lm_head_chunk", w.at("lm_head_chunk"), "fused LM head chunk; 0: unfused");
    t.key("cp_style", w.at("cp_style"), "ulysses | ring");
  }
  t.table("muonplan");
  t.key("owners", plan.at("owners"));
  t.key("offload_staging", opt.at("optimizer_offload_staging"), "whole | chunked");
  t.key("pinned_state", opt.at("optimizer_offload_pinned"));
  t.key("include_mtp", plan.at("include_mtp"));
  t.key("gpu_memory_gib", plan.at("limits").at("gpu_memory_gib"), "the limits planned for");
  t.key("host_ram_gib", plan.at("limits").at("host_ram_per_node_gib"), "per node");
  if (optimizer != "muon") {  // not in [optim], yet part of the plan
    t.key("ns_schedule", opt.at("ns_schedule"));
    if (opt.at("ns_schedule") == "custom")
      t.key("newton_schulz_coefficients", opt.at("newton_schulz_coefficients"));
  }
  return t.str();
}

}  // namespace muonplan
