// Plan JSON to a prime-rl config. JSON numbers, booleans and strings print as valid TOML values
// (nlohmann writes 0.0, 1e-08, "text"), so values are copied, not retyped.
#include "prime_rl/trainer_config.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "muonplan/base/error.h"
#include "prime_rl/prime_rl_emit_check.h"
#include "prime_rl/trainer_keys.h"
#include "trainer_file.h"

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
      : top_level_(in.sft || in.standalone),
        sft_(in.sft),
        over_file_(!in.only_given),
        date_(in.prime_rl_version) {}
  void comment(const std::string& text) { out_ << "# " << text << "\n"; }
  // The header is written with the table's first line: a table with no key gets none.
  void table(const std::string& role) {
    pending_ = "\n[" + prime_rl_table(role, top_level_) + "]\n";
  }
  // A key of the key table (std::logic_error if it is not one), in the table `role`, under
  // the name prime-rl of the version's date gives it; a key that date lacks is not written
  // (check_prime_rl_keys_on has refused a plan that needs it).
  void raw(const std::string& role, const std::string& name, const std::string& value,
           const std::string& note = "") {
    trainer_key(role, name);
    std::string dated = prime_rl_key_on(role, name, sft_, date_);
    // Over a file of an era before [deployment], the world lines are the patch's to map onto
    // the file's own launcher keys (trainer_config_patch.cc), so they are kept here.
    if (dated.empty() && role == "deployment" && over_file_) dated = name;
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
    out_ << pending_ << text << "\n";
    pending_.clear();
  }
  bool top_level_, sft_, over_file_;
  std::string date_, pending_;
  std::ostringstream out_;
};

// Without a trainer config, a key whose value muonplan would only default is left to
// prime-rl's default: written when the user gave one of its flags.
bool given(const EmitInput& in, std::initializer_list<const char*> flags) {
  if (!in.only_given) return true;
  for (const char* f : flags) {
    if (in.given.count(f)) return true;
  }
  return false;
}

// dp_replicate as the file gives it: nodes / nodes_per_fsdp_group where the file uses that key.
bool fsdp_group(const json& plan, const EmitInput& in) {
  const int nodes = plan.at("nodes"), world = plan.at("world_size");
  const int dpr = world / plan.at("layout").at("fsdp").get<int>();
  return in.fsdp_group_key && nodes % dpr == 0;
}

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
  if (fsdp_group(plan, in)) {
    const int dpr = plan.at("world_size").get<int>() / plan.at("layout").at("fsdp").get<int>();
    t.key("deployment", "nodes_per_fsdp_group", json(nodes / dpr), "nodes / dp_replicate");
  }
  // prime-rl runs a multi_node deployment only under SLURM: the table must exist, and every
  // field of it has a default (its docs/slurm.md), so the default job name makes it.
  t.table("slurm");
  t.key("slurm", "job_name", json("prime-rl"), "multi_node needs [slurm]");
}

// prime-rl's attn names for the plan's kernel (written only when the plan names one).
std::string attn_name(const std::string& kernel) {
  if (kernel == "fa2") return "flash_attention_2";
  if (kernel == "fa3") return "flash_attention_3";
  return kernel;  // sdpa, auto
}

// [model.ac] as the plan runs it (planner/src/cost/ac_layers.h): "None" without AC, else its
// mode, a selective layer's targets, and freq when AC runs on every N-th layer only.
std::string ac_table(const json& w) {
  const std::string mode = w.at("ac");
  if (mode != "full" && mode != "selective") return "\"None\"";
  std::string out = "{ mode = \"" + mode + "\"";
  if (mode == "selective") {
    std::string targets;
    for (const json& t : w.value("ac_targets", json::array()))
      targets += (targets.empty() ? "\"" : ", \"") + t.get<std::string>() + "\"";
    out += ", targets = [" + targets + "]";
  }
  const int64_t freq = w.value("ac_freq", int64_t{1});
  if (freq > 1) out += ", freq = " + std::to_string(freq);
  return out + " }";
}

void write_activations(Writer& t, const json& w, const EmitInput& in) {
  if (given(in, {"ac", "ac-targets", "ac-freq"})) {
    trainer_key("model", "ac.mode");
    t.raw("model", "ac", ac_table(w));
  }
  if (given(in, {"ac", "ac-offload"})) {
    trainer_key("model", "ac_offloading.max_inflight_activations");
    t.raw("model", "ac_offloading",
          !w.at("ac_offload").get<bool>() ? "\"None\""
          // The config's in-flight count when it set one; else an empty table: prime-rl's
          // defaults, as the planner took the topology's (the round trip keeps it unset).
          : in.ac_max_inflight > 0
              ? "{ max_inflight_activations = " + std::to_string(in.ac_max_inflight) + " }"
              : "{}");
  }
  if (!in.sft && given(in, {"lm-head-chunk"})) {
    const int64_t chunk = w.at("lm_head_chunk");
    t.key("model", "fused_lm_head_token_chunk_size", chunk > 0 ? json(chunk) : json("disabled"));
  }
}

void write_model(Writer& t, const json& plan, const EmitInput& in) {
  const json& layout = plan.at("layout");
  const std::string offload = plan.at("offload");
  const int world = plan.at("world_size"), fsdp = layout.at("fsdp");
  if (!fsdp_group(plan, in))
    t.key("model", "dp_replicate", json(world / fsdp), "world / fsdp (HSDP replicas)");
  t.key("model", "cp", layout.at("cp"));
  t.key("model", "ep", layout.at("ep"));
  const json w = plan.value("workload", json());
  if (!w.is_null() && (given(in, {"cp-style"}) || w.at("cp_style") != "ring"))
    t.key("model", "cp_style", w.at("cp_style"));
  if (!w.is_null() && w.contains("attention"))
    t.key("model", "attn", json(attn_name(w.at("attention"))));
  t.key("model", "optim_cpu_offload", json(offload == "optimizer"));
  // Muon under full offload never gets here: prime_rl_config's check_prime_rl_runs refuses it.
  // false is written too, so a plan that turns a file's full offload off says so.
  if (offload == "full" || !in.only_given) t.key("model", "full_offload", json(offload == "full"));
  if (w.is_null()) return;
  for (const char* k : {"optimization_dtype", "reduce_dtype"}) {
    const std::string flag =
        k == std::string("reduce_dtype") ? "reduce-dtype" : "optimization-dtype";
    if (given(in, {flag.c_str()}) || w.at(k) != "float32") t.key("model", k, w.at(k));
  }
  write_activations(t, w, in);
}

// [model.lora] (RL: [trainer.model.lora]) as dotted keys of the model table; the adapter slots
// are the trainer's max_concurrent_runs (write_runs).
void write_lora(Writer& t, const json& plan) {
  if (!plan.contains("lora")) return;
  const json& l = plan.at("lora");
  t.key("model", "lora.rank", l.at("rank"));
  if (l.at("alpha").get<double>() > 0) t.key("model", "lora.alpha", l.at("alpha"));  // 0: 32
  if (!l.at("target_modules").empty())
    t.key("model", "lora.target_modules", l.at("target_modules"));
}

void write_optimizer(Writer& t, const json& plan, const EmitInput& in) {
  const json& opt = plan.at("optimizer_config");
  const json& adamw = opt.at("adamw");
  const std::string optimizer = plan.at("optimizer");
  t.table("optim");
  t.key("optim", "type", json(optimizer == "signsgd" ? "sign_sgd" : optimizer));
  const bool muon = optimizer == "muon";
  if (given(in, {"lr", "adamw-lr"}))
    t.key("optim", "lr", optimizer == "adamw" ? adamw.at("lr") : opt.at("lr"));
  const json wd = optimizer == "adamw" ? adamw.at("weight_decay") : opt.at("weight_decay");
  if (given(in, {"weight-decay", "adamw-weight-decay"})) t.key("optim", "weight_decay", wd);
  if (muon && given(in, {"momentum"})) t.key("optim", "mu", opt.at("momentum"));
  if (optimizer != "signsgd" && given(in, {"adamw-betas"})) {
    t.key("optim", "betas1", adamw.at("beta1"), muon ? "AdamW part (non-matrix params)" : "");
    t.key("optim", "betas2", adamw.at("beta2"));
  }
  if (!muon) return;
  t.ours("nesterov", opt.at("nesterov"));
  t.ours("bf16_momentum", opt.at("bf16_momentum"), "dion's Muon: no key for the dtype");
  t.ours("update_rms", opt.at("update_rms"));
  if (adamw.at("lr") != opt.at("lr") && given(in, {"lr", "adamw-lr"}))
    t.ours("adamw_lr", adamw.at("lr"));
  if (adamw.at("weight_decay") != wd && given(in, {"weight-decay", "adamw-weight-decay"}))
    t.ours("adamw_weight_decay", adamw.at("weight_decay"));
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

namespace {

// Whether the plan's allocator (--allocator) is other than prime-rl's launcher's at the date.
bool allocator_not_launchers(const EmitInput& in) {
  if (in.allocator.empty()) return false;  // the topology's: not a prime-rl setting
  const bool launcher = detail::prime_rl_defaults(in.prime_rl_version).expandable_segments;
  return (in.allocator == "expandable") != launcher;
}

// The allocator in the RL trainer's env table ([trainer.env_vars], from #2863): over a file the
// value as planned, so it is a changed key only where the plan's differs from the file's own;
// alone, only where it is not the launcher's default. An era without the table says it in the
// header comment instead (prime_rl_config).
void write_allocator(Writer& t, const EmitInput& in) {
  if (in.allocator.empty() || (in.only_given && !allocator_not_launchers(in))) return;
  t.raw("trainer", "env_vars.PYTORCH_CUDA_ALLOC_CONF",
        in.allocator == "expandable" ? "\"expandable_segments:True\""
                                     : "\"expandable_segments:False\"");
}

// LoRA's adapter slots: the trainer's max_concurrent_runs ([trainer] in RL, top level in SFT
// and trainer files, so it is written before any header there).
void write_runs(Writer& t, const json& plan, const EmitInput& in, const std::string& role) {
  if (!plan.contains("lora")) return;
  const json& adapters = plan.at("lora").at("adapters");
  if (adapters.get<int>() > 1 || given(in, {"lora-adapters"}))
    t.key(role, "max_concurrent_runs", adapters);
}

}  // namespace

// The standalone trainer's own schema: [model] (with seq_len), [data] fake rows, [optim]. Its
// world is torchrun's, which no key of the file holds: `# muonplan: nodes` and
// `gpus_per_node` carry it, the planner reads them back, and a comment gives the command.
void write_trainer_file(Writer& t, const json& plan, const EmitInput& in) {
  const json w = plan.value("workload", json());
  t.comment("world: torchrun --nnodes " + std::to_string(plan.at("nodes").get<int>()) +
            " --nproc-per-node " + std::to_string(plan.at("gpus_per_node").get<int>()));
  t.ours("nodes", plan.at("nodes"), "torchrun --nnodes");
  t.ours("gpus_per_node", plan.at("gpus_per_node"), "torchrun --nproc-per-node");
  write_runs(t, plan, in, "");
  t.table("model");
  t.key("model", "name", json(in.model_id));
  if (!w.is_null()) t.key("model", "seq_len", w.at("seq_len"));
  write_model(t, plan, in);
  write_lora(t, plan);
  if (!w.is_null()) {
    const int64_t seq = w.at("seq_len"), tokens = w.at("tokens_per_step");
    t.table("data");
    t.key("data", "fake.batch_size", json(tokens / seq), "rows per step");
  }
  write_optimizer(t, plan, in);
  write_muonplan(t, plan);
}

std::string prime_rl_config(const json& plan, const EmitInput& in) {
  check_prime_rl_runs(plan, in.prime_rl_version, in.sft, in.vlm, in.standalone);
  check_prime_rl_keys_on(plan, in.prime_rl_version, in.sft);
  // A fragment alone carries its world in [deployment], which prime-rl of an older date lacks
  // (over a file, the file's own launcher keys take it: trainer_config_patch.cc).
  if (in.only_given && !in.standalone &&
      prime_rl_key_on("deployment", "type", in.sft, in.prime_rl_version).empty()) {
    throw InputError({}, "--emit",
                     "prime-rl of " + in.prime_rl_version +
                         " has no [deployment] table (from 2026-02-24, #1859; docs/"
                         "trainer-config.md, \"Key eras\"): its world is its launcher's keys "
                         "(trainer_gpu_ids, or rl_slurm's num_train_nodes), which muonplan writes "
                         "only over a file that has them; no config written: give "
                         "--trainer-config FILE of that era, or --prime-rl-version 2026-02-24 or "
                         "later");
  }
  Writer t(in);
  t.comment(std::string("prime-rl ") +
            (in.sft          ? "SFT"
             : in.standalone ? "trainer"
                             : "RL") +
            " config fragment for the muonplan plan of " + plan.at("model").get<std::string>() +
            " on " + plan.at("topology").get<std::string>() +
            (plan.at("fits").get<bool>() ? "" : " (NO FIT)") + ".");
  t.comment("decision: " + plan.at("decision").at("reason").get<std::string>());
  // What the plan assumed that prime-rl has no key for: said here, not written as a key, and
  // not read back (a re-plan of the file takes prime-rl's balanced routing).
  const json work = plan.value("workload", json());
  const json load = work.is_object() ? work.value("expert_load", json()) : json();
  if (load.is_array() && !load.empty()) {
    double total = 0, busiest = 0;
    for (const json& x : load)
      total += x.get<double>(), busiest = std::max(busiest, x.get<double>());
    char line[200];
    std::snprintf(line, sizeof line,
                  "planned with --expert-load (%zu experts, the busiest at %.2fx the mean): "
                  "prime-rl has no key for the routing; give the flag again to re-plan it",
                  load.size(), total > 0 ? busiest * load.size() / total : 0.0);
    t.comment(line);
  }
  const json lora = plan.value("lora", json());
  if (lora.is_object() && lora.contains("active_runs")) {
    t.comment("planned with --lora-active-runs " + lora.at("active_runs").dump() + " of the " +
              lora.at("adapters").dump() +
              " adapter slots: prime-rl has no key for it (a run's AdamW is made when its "
              "orchestrator's run directory appears); give the flag again to re-plan it");
  }
  const bool env_table =
      !in.sft && !in.standalone &&
      !prime_rl_key_on("trainer", "env_vars.PYTORCH_CUDA_ALLOC_CONF", false, in.prime_rl_version)
           .empty();
  if (!env_table && allocator_not_launchers(in)) {
    t.comment("planned with --allocator " + in.allocator +
              ": muonplan writes the trainer's PYTORCH_CUDA_ALLOC_CONF only into an RL config's "
              "[trainer.env_vars] (from #2863, 2026-06-24); set it in the trainer's environment, "
              "and give the flag again to re-plan it");
  }
  if (in.standalone) {
    write_trainer_file(t, plan, in);
    return t.str();
  }
  const json w = plan.value("workload", json());
  if (w.is_null()) t.comment("no workload planned: prime-rl's seq_len and batch defaults apply");
  if (!in.sft && !w.is_null()) t.key("", "seq_len", w.at("seq_len"));
  if (in.sft) write_runs(t, plan, in, "");
  t.table(in.sft ? "model" : "shared");
  t.key(in.sft ? "model" : "shared", "name", json(in.model_id));
  if (in.sft) {
    write_model(t, plan, in);
    write_lora(t, plan);
  }
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
    t.table("trainer");
    write_runs(t, plan, in, "trainer");
    write_allocator(t, in);
    t.table("model");
    write_model(t, plan, in);
    write_lora(t, plan);
  }
  write_optimizer(t, plan, in);
  write_muonplan(t, plan);
  return t.str();
}

}  // namespace muonplan
