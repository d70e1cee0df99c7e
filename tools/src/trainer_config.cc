// Plan JSON to a prime-rl config. JSON numbers, booleans and strings print as valid TOML values
// (nlohmann writes 0.0, 1e-08, "text"), so values are copied, not retyped.
#include "muonplan/tools/trainer_config.h"

#include <sstream>

#include "muonplan/planner/trainer_keys.h"
#include "muonplan/tools/prime_rl_emit_check.h"

namespace muonplan {
namespace {

using json = nlohmann::json;

std::string toml_value(const json& v) {
  if (!v.is_array()) return v.dump();
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + toml_value(v[i]);
  return out + "]";
}

class Writer {
 public:
  explicit Writer(const EmitInput& in)
      : top_level_(in.sft || in.standalone), sft_(in.sft), date_(in.prime_rl_version) {}
  void comment(const std::string& text) { out_ << "# " << text << "\n"; }
  void table(const std::string& role) {
    out_ << "\n[" << prime_rl_table(role, top_level_) << "]\n";
  }
  // A key of the key table (std::logic_error if it is not one), in the table `role`, under
  // the name prime-rl of the version's date gives it; a key that date lacks is not written
  // (check_prime_rl_keys_on has refused a plan that needs it).
  void raw(const std::string& role, const std::string& name, const std::string& value,
           const std::string& note = "") {
    trainer_key(role, name);
    const std::string dated = prime_rl_key_on(role, name, sft_, date_);
    if (dated.empty()) return;
    trainer_key(role, dated);
    line(dated + " = " + value, note);
  }
  void key(const std::string& role, const std::string& name, const json& value,
           const std::string& note = "") {
    raw(role, name, toml_value(value), note);
  }
  void ours(const std::string& name, const json& value, const std::string& note = "") {
    trainer_key("muonplan", name);
    line("# muonplan: " + name + " = " + toml_value(value), note);
  }
  std::string str() const { return out_.str(); }

 private:
  void line(std::string text, const std::string& note) {
    if (!note.empty()) {
      text.resize(std::max<size_t>(text.size() + 2, 40), ' ');
      text += "# " + note;
    }
    out_ << text << "\n";
  }
  bool top_level_, sft_;
  std::string date_;
  std::ostringstream out_;
};

void write_deployment(Writer& t, const json& plan, const EmitInput& in) {
  const int nodes = plan.at("nodes"), gpn = plan.at("gpus_per_node");
  t.table("deployment");
  if (nodes == 1 && (in.sft || in.single_node)) {
    t.key("deployment", "type", json("single_node"));
    t.key("deployment", "num_train_gpus", json(gpn));
    return;
  }
  t.key("deployment", "type", json("multi_node"));
  t.key("deployment", "num_train_nodes", json(nodes));
  t.key("deployment", "gpus_per_node", json(gpn));
}

void write_model(Writer& t, const json& plan, const EmitInput& in) {
  const json& layout = plan.at("layout");
  const std::string offload = plan.at("offload");
  const int world = plan.at("world_size"), fsdp = layout.at("fsdp");
  t.key("model", "dp_replicate", json(world / fsdp), "world / fsdp (HSDP replicas)");
  t.key("model", "cp", layout.at("cp"));
  t.key("model", "ep", layout.at("ep"));
  const json w = plan.value("workload", json());
  if (!w.is_null()) t.key("model", "cp_style", w.at("cp_style"));
  t.key("model", "optim_cpu_offload", json(offload == "optimizer"));
  // Muon under full offload never gets here: prime_rl_config's check_prime_rl_runs refuses it.
  if (offload == "full") t.key("model", "full_offload", json(true));
  if (w.is_null()) return;
  t.key("model", "optimization_dtype", w.at("optimization_dtype"));
  t.key("model", "reduce_dtype", w.at("reduce_dtype"));
  trainer_key("model", "ac.mode");
  t.raw("model", "ac", w.at("ac") == "full" ? "{ mode = \"full\" }" : "\"None\"");
  trainer_key("model", "ac_offloading.max_inflight_activations");
  t.raw("model", "ac_offloading",
        w.at("ac_offload").get<bool>()
            ? "{ max_inflight_activations = " + std::to_string(in.ac_max_inflight) + " }"
            : "\"None\"");
  if (!in.sft) {
    const int64_t chunk = w.at("lm_head_chunk");
    t.key("model", "fused_lm_head_token_chunk_size", chunk > 0 ? json(chunk) : json("disabled"));
  }
}

void write_optimizer(Writer& t, const json& plan) {
  const json& opt = plan.at("optimizer_config");
  const json& adamw = opt.at("adamw");
  const std::string optimizer = plan.at("optimizer");
  t.table("optim");
  t.key("optim", "type", json(optimizer == "signsgd" ? "sign_sgd" : optimizer));
  const bool muon = optimizer == "muon";
  t.key("optim", "lr", optimizer == "adamw" ? adamw.at("lr") : opt.at("lr"));
  const json wd = optimizer == "adamw" ? adamw.at("weight_decay") : opt.at("weight_decay");
  t.key("optim", "weight_decay", wd);
  if (muon) t.key("optim", "mu", opt.at("momentum"));
  if (optimizer != "signsgd") {
    t.key("optim", "betas1", adamw.at("beta1"), muon ? "AdamW part (non-matrix params)" : "");
    t.key("optim", "betas2", adamw.at("beta2"));
  }
  if (!muon) return;
  t.ours("nesterov", opt.at("nesterov"));
  t.ours("bf16_momentum", opt.at("bf16_momentum"), "dion's Muon: no key for the dtype");
  t.ours("update_rms", opt.at("update_rms"));
  if (adamw.at("lr") != opt.at("lr")) t.ours("adamw_lr", adamw.at("lr"));
  if (adamw.at("weight_decay") != wd) t.ours("adamw_weight_decay", adamw.at("weight_decay"));
}

void write_muonplan(Writer& t, const json& plan) {
  const json& opt = plan.at("optimizer_config");
  t.comment("");
  t.comment("muonplan's settings: prime-rl has no key for them (it skips comments);");
  t.comment("muonplan plan --trainer-config reads them back.");
  t.ours("ns_schedule", opt.at("ns_schedule"));
  t.ours("newton_schulz_coefficients", opt.at("newton_schulz_coefficients"), "(a, b, c) per step");
  t.ours("owners", plan.at("owners"));
  t.ours("offload_staging", opt.at("optimizer_offload_staging"));
  t.ours("pinned_state", opt.at("optimizer_offload_pinned"));
  t.ours("include_mtp", plan.at("include_mtp"));
  t.ours("gpu_memory_gib", plan.at("limits").at("gpu_memory_gib"), "the limits planned for");
  t.ours("host_ram_gib", plan.at("limits").at("host_ram_per_node_gib"));
}

}  // namespace

// The standalone trainer's own schema: [model] (with seq_len), [data] fake rows, [optim]; the
// world is torchrun's, so a comment says it.
void write_trainer_file(Writer& t, const json& plan, const EmitInput& in) {
  const json w = plan.value("workload", json());
  t.comment("world: torchrun --nnodes " + std::to_string(plan.at("nodes").get<int>()) +
            " --nproc-per-node " + std::to_string(plan.at("gpus_per_node").get<int>()));
  t.table("model");
  t.key("model", "name", json(in.model_id));
  if (!w.is_null()) t.key("model", "seq_len", w.at("seq_len"));
  write_model(t, plan, in);
  if (!w.is_null()) {
    const int64_t seq = w.at("seq_len"), tokens = w.at("tokens_per_step");
    t.table("data");
    t.key("data", "fake.batch_size", json(tokens / seq), "rows per step");
  }
  write_optimizer(t, plan);
  write_muonplan(t, plan);
}

std::string prime_rl_config(const json& plan, const EmitInput& in) {
  check_prime_rl_runs(plan);
  check_prime_rl_keys_on(plan, in.prime_rl_version, in.sft);
  Writer t(in);
  t.comment(std::string("prime-rl ") +
            (in.sft          ? "SFT"
             : in.standalone ? "trainer"
                             : "RL") +
            " config fragment for the muonplan plan of " + plan.at("model").get<std::string>() +
            " on " + plan.at("topology").get<std::string>() +
            (plan.at("fits").get<bool>() ? "" : " (NO FIT)") + ".");
  t.comment("decision: " + plan.at("decision").at("reason").get<std::string>());
  if (in.standalone) {
    write_trainer_file(t, plan, in);
    return t.str();
  }
  const json w = plan.value("workload", json());
  if (w.is_null()) t.comment("no workload planned: prime-rl's seq_len and batch defaults apply");
  if (!in.sft && !w.is_null()) t.key("", "seq_len", w.at("seq_len"));
  t.table(in.sft ? "model" : "shared");
  t.key(in.sft ? "model" : "shared", "name", json(in.model_id));
  if (in.sft) write_model(t, plan, in);
  if (in.sft && !w.is_null()) {
    const int64_t seq = w.at("seq_len"), tokens = w.at("tokens_per_step");
    t.table("data");
    t.key("data", "seq_len", json(seq));
    t.key("data", "batch_size", json(tokens / seq), "rows per step");
    t.key("data", "micro_batch_size", w.at("micro_batch_seqs"));
  } else if (!w.is_null()) {
    const int64_t seq = w.at("seq_len"), tokens = w.at("tokens_per_step");
    t.table("orchestrator");
    if (in.batch_key == "batch_size") {
      t.key("orchestrator", "batch_size", json(tokens / seq), "samples (full rows planned)");
    } else {
      t.key("orchestrator", "token_batch_size", json(tokens));
    }
  }
  write_deployment(t, plan, in);
  if (!in.sft) {
    t.table("model");
    write_model(t, plan, in);
  }
  write_optimizer(t, plan);
  write_muonplan(t, plan);
  return t.str();
}

}  // namespace muonplan
