// The planning tables of a prime-rl RL or SFT config, read as prime-rl reads them: its
// defaults where the file is silent, its older key names, its rules as input errors.
#include <algorithm>
#include <cstdio>

#include "trainer_file.h"

namespace muonplan::detail {
namespace {

// `[model] attn`: prime-rl's kernel names onto --attention. flash_attention_4 (SM100) has no
// published throughput the planner could use: refused rather than planned as another kernel.
void read_attention(const TrainerFile& f, TrainerConfig& tc) {
  if (!f.get("model", "attn")) return;
  const std::string attn = f.string("model", "attn", "auto");
  static const std::pair<const char*, const char*> kNames[] = {{"flash_attention_2", "fa2"},
                                                               {"flash_attention_3", "fa3"},
                                                               {"sdpa", "sdpa"},
                                                               {"auto", "auto"}};
  for (const auto& [name, flag] : kNames) {
    if (attn == name) {
      tc.values.push_back(f.value("attention", flag, "model", "attn"));
      return;
    }
  }
  f.fail("model", "attn",
         "expected flash_attention_2, flash_attention_3, sdpa or auto (the planner has no "
         "throughput figures for others), got '" +
             attn + "'");
}

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// The one of two names (current, older) the file uses; both is an error.
std::string either(const TrainerFile& f, const std::string& table, const std::string& now,
                   const std::string& old_table, const std::string& old) {
  const bool a = f.get(table, now), b = f.get(old_table, old);
  if (a && b) f.fail(old_table, old, "older name of " + f.field(table, now) + "; give one of them");
  return b ? old : now;
}

// [model] optimization_dtype (masters, their gradients, optimizer state) and reduce_dtype
// (FSDP2's gradient reduce-scatter): float32 both by default; --optimization-dtype and
// --reduce-dtype (Workload::master_bytes, reduce_bytes).
void read_precision(const TrainerFile& f, TrainerConfig& tc) {
  const std::pair<const char*, const char*> keys[] = {{"optimization_dtype", "optimization-dtype"},
                                                      {"reduce_dtype", "reduce-dtype"}};
  for (auto [key, flag] : keys) {
    const std::string v = f.string("model", key, "float32");
    if (v != "float32" && v != "bfloat16")
      f.fail("model", key, "expected float32 or bfloat16, got '" + v + "'");
    tc.values.push_back(f.value(flag, v, "model", key));
  }
}

}  // namespace

// A standalone trainer file has no world: `uv run trainer @ FILE` is one process on one GPU,
// and torchrun's --nnodes x --nproc-per-node make it more; the flags say which (one GPU when
// they are not given), and the note says what was assumed (issue 50 item 5: 8 GPUs were
// assumed, a world the command line never asked for). `# muonplan: nodes` and `gpus_per_node`
// (what --emit prime-rl writes) carry a planned world in the file.
void read_torchrun_world(const TrainerFile& f, TrainerConfig& tc) {
  tc.nodes = static_cast<int>(f.integer("muonplan", "nodes", 1));
  tc.gpus_per_node = static_cast<int>(f.integer("muonplan", "gpus_per_node", 1));
  tc.single_node = false;
  if (f.get("muonplan", "nodes") || f.get("muonplan", "gpus_per_node")) {
    tc.values.push_back(f.value("nodes", std::to_string(tc.nodes), "muonplan", "nodes"));
    tc.values.push_back(
        f.value("gpus-per-node", std::to_string(tc.gpus_per_node), "muonplan", "gpus_per_node"));
    return;
  }
  const SourceLoc none{f.path(), 0, 0};
  tc.values.push_back({"nodes", "1", none, "torchrun --nnodes (not in a trainer file)"});
  tc.values.push_back(
      {"gpus-per-node", "1", none, "one process: uv run trainer @ FILE (not in a trainer file)"});
  tc.notes.push_back(
      "standalone trainer file: its world is the launch's, not the file's; planned as one "
      "process on one GPU (uv run trainer @ FILE) unless --gpus-per-node G (torchrun "
      "--nproc-per-node G) and --nodes N (--nnodes N) say otherwise");
}

// The rl launchers before [deployment]: rl_slurm's top-level num_train_nodes (older
// num_training_nodes) and gpus_per_node, or rl's [slurm] table of them, or the local
// launcher's trainer_gpu_ids (one node; [slurm] ignores it).
bool read_launcher_world(const TrainerFile& f, TrainerConfig& tc) {
  const bool slurm = f.get("slurm", "num_train_nodes") != nullptr;
  const std::string table = slurm ? "slurm" : "";
  const std::string nodes_key =
      slurm ? "num_train_nodes" : either(f, "", "num_train_nodes", "", "num_training_nodes");
  const TomlNode* ids = slurm ? nullptr : f.get("", "trainer_gpu_ids");
  if (!f.get(table, nodes_key) && !ids) return false;
  for (const char* k : {"type", "num_train_nodes", "num_train_gpus", "gpus_per_node"}) {
    if (f.get("deployment", k))
      f.fail("deployment", k, "the file also sets its world with top-level launcher keys");
  }
  if (f.get(table, nodes_key)) {
    if (ids) f.fail("", "trainer_gpu_ids", "local launcher key in an rl_slurm file");
    tc.world_table = table;
    tc.nodes = static_cast<int>(f.integer(table, nodes_key, 1));
    tc.gpus_per_node = static_cast<int>(f.integer(table, "gpus_per_node", 8));
    tc.single_node = false;
    tc.values.push_back(f.value("nodes", std::to_string(tc.nodes), table, nodes_key));
    tc.values.push_back(
        f.value("gpus-per-node", std::to_string(tc.gpus_per_node), table, "gpus_per_node"));
    return true;
  }
  if (ids->kind != TomlNode::Kind::array || ids->items.empty() ||
      !std::all_of(ids->items.begin(), ids->items.end(),
                   [](const TomlNode& i) { return i.kind == TomlNode::Kind::integer; }))
    f.fail("", "trainer_gpu_ids", "expected a list of GPU ids, got " + ids->shown());
  tc.nodes = 1;
  tc.gpus_per_node = tc.node_gpus =
      static_cast<int>(ids->items.size());  // the node's size: unknown
  tc.single_node = true;
  tc.values.push_back(f.value("nodes", "1", "", "trainer_gpu_ids"));
  tc.values.push_back(
      f.value("gpus-per-node", std::to_string(tc.gpus_per_node), "", "trainer_gpu_ids"));
  tc.notes.push_back("trainer_gpu_ids: one node, " + std::to_string(tc.gpus_per_node) +
                     " trainer GPU(s)");
  return true;
}

void read_deployment(const TrainerFile& f, TrainerConfig& tc) {
  if (f.standalone()) return read_torchrun_world(f, tc);
  if (read_launcher_world(f, tc)) return;
  const std::string type = f.string("deployment", "type", "single_node");
  if (type != "single_node" && type != "multi_node")
    f.fail("deployment", "type", "expected single_node or multi_node, got '" + type + "'");
  // Older SFT files: [deployment] num_nodes / num_gpus, or top-level num_nodes / gpus_per_node.
  std::string nodes_key = either(f, "deployment", "num_train_nodes", "deployment", "num_nodes");
  std::string nodes_table = "deployment";
  if (f.get("", "num_nodes")) {
    if (f.get("deployment", nodes_key)) f.fail("", "num_nodes", "also given in [deployment]");
    nodes_table = "";
    nodes_key = "num_nodes";
  }
  const std::string gpn_table =
      f.get("", "gpus_per_node") && !f.get("deployment", "gpus_per_node") ? "" : "deployment";
  const std::string gpus_key = either(f, "deployment", "num_train_gpus", "deployment", "num_gpus");
  tc.gpus_per_node = static_cast<int>(f.integer(gpn_table, "gpus_per_node", 8));
  tc.single_node = type == "single_node" && !f.get(nodes_table, nodes_key);
  if (tc.single_node) {
    const int gpus = static_cast<int>(f.integer("deployment", gpus_key, 1));
    const int infer = static_cast<int>(f.integer("deployment", "num_infer_gpus", f.sft() ? 0 : 1));
    if (f.get("deployment", "gpus_per_node") && gpus + infer > tc.gpus_per_node)
      f.fail("deployment", gpus_key, "trainer and inference GPUs exceed gpus_per_node");
    tc.nodes = 1;
    tc.node_gpus = tc.gpus_per_node;
    tc.infer_gpus = infer;
    tc.gpus_per_node = gpus;  // the trainer's world: one node of num_train_gpus
    tc.values.push_back(f.value("nodes", "1", "deployment", "type"));
    tc.values.push_back(f.value("gpus-per-node", std::to_string(gpus), "deployment", gpus_key));
    if (!f.get("deployment", gpus_key))
      tc.notes.push_back("[deployment]: single node, num_train_gpus = 1 (prime-rl's default)");
    return;
  }
  if (!f.get(nodes_table, nodes_key) && !f.sft())
    f.fail("deployment", "type", "multi_node needs num_train_nodes");
  tc.nodes = static_cast<int>(f.integer(nodes_table, nodes_key, 2));
  tc.values.push_back(f.value("nodes", std::to_string(tc.nodes), nodes_table, nodes_key));
  tc.values.push_back(
      f.value("gpus-per-node", std::to_string(tc.gpus_per_node), gpn_table, "gpus_per_node"));
}

void read_parallel(const TrainerFile& f, TrainerConfig& tc) {
  const int64_t world = int64_t(tc.nodes) * tc.gpus_per_node;  // both < 2^31
  tc.dp_replicate = static_cast<int>(f.integer("model", "dp_replicate", 1));
  // [deployment] nodes_per_fsdp_group, or top level in rl_slurm-era files.
  const std::string per_table = f.get("", "nodes_per_fsdp_group")        ? ""
                                : f.get("slurm", "nodes_per_fsdp_group") ? "slurm"
                                                                         : "deployment";
  if (const TomlNode* g = f.get(per_table, "nodes_per_fsdp_group")) {
    const int per = static_cast<int>(f.integer(per_table, "nodes_per_fsdp_group", 1));
    if (tc.nodes % per != 0)
      f.fail(per_table, "nodes_per_fsdp_group",
             "does not divide the " + std::to_string(tc.nodes) + " nodes");
    if (f.get("model", "dp_replicate") && tc.dp_replicate != tc.nodes / per)
      f.fail("model", "dp_replicate",
             "contradicts nodes_per_fsdp_group (" + std::to_string(tc.nodes / per) + ")");
    tc.dp_replicate = tc.nodes / per;
    tc.fsdp_group_key = true;
    tc.layout_at = f.at(*g);
  }
  if (world % tc.dp_replicate != 0)
    f.fail("model", "dp_replicate",
           "does not divide the world of " + std::to_string(world) + " GPUs");
  const int64_t group = world / tc.dp_replicate;  // dp_shard x cp
  tc.cp = static_cast<int>(f.integer("model", "cp", 1));
  if (group % tc.cp != 0)
    f.fail("model", "cp", "does not divide world / dp_replicate = " + std::to_string(group));
  const std::string style = f.string("model", "cp_style", "ring");
  if (style != "ring" && style != "ulysses")
    f.fail("model", "cp_style", "expected ring or ulysses, got '" + style + "'");
  tc.values.push_back(f.value("cp-style", style, "model", "cp_style"));
  read_attention(f, tc);
  // [model.vlm] (RL: the shared [model] or [trainer.model]): prime-rl's CP rules differ for a
  // VLM (prime_rl_runs.cc); the plan is the language model's.
  tc.vlm = f.section("model", "vlm", false) || f.section("shared", "vlm", false);
  if (const TomlNode* ep = f.get("model", "ep")) {
    if (ep->kind == TomlNode::Kind::string && ep->str == "auto") {
      tc.ep = 0;
    } else {
      tc.ep = static_cast<int>(f.integer("model", "ep", 1));
      if (tc.ep > 1 && tc.ep % tc.cp != 0)  // ep 1 is no expert parallelism: any cp
        f.fail("model", "ep",
               "ep % cp != 0 (ep " + std::to_string(tc.ep) + ", cp " + std::to_string(tc.cp) + ")");
      if (group % tc.ep != 0)
        f.fail("model", "ep", "does not divide dp_shard x cp = " + std::to_string(group));
    }
  }
  for (const char* k : {"dp_replicate", "cp", "ep"}) {
    if (const TomlNode* n = f.get("model", k); n && tc.layout_at.line == 0) tc.layout_at = f.at(*n);
  }
  if (!f.get("model", "ep") && !f.defaults().ep_auto) tc.ep = 1;  // before ep = "auto"
  read_precision(f, tc);
  if (tc.ep == 0)
    tc.notes.push_back(f.field("model", "ep") +
                       " = auto: min(world / dp_replicate, 8) for MoE, else 1");
}

std::string optim_cpu_offload_on(const TrainerFile& f) {
  if (f.get("model", "optim_cpu_offload")) return "the file sets optim_cpu_offload = true";
  return "optim_cpu_offload defaults to true on " + f.defaults().date;
}

namespace {

std::string read_offload(const TrainerFile& f, TrainerConfig& tc, const std::string& optimizer) {
  const bool optim = f.boolean("model", "optim_cpu_offload", f.defaults().optim_cpu_offload);
  const bool full = f.section("model", "full_offload", false);
  const bool fsdp = f.boolean("model", "fsdp_cpu_offload", false);
  const std::string ours = f.string("muonplan", "offload", "");
  if (!ours.empty() && ours != "full")
    f.fail("muonplan", "offload", "expected \"full\", got '" + ours + "'");
  if (int(optim) + int(full) + int(fsdp) + int(!ours.empty()) > 1) {
    const std::string key = full ? "full_offload" : fsdp ? "fsdp_cpu_offload" : "optim_cpu_offload";
    f.fail("model", f.get("model", key) ? key : "optim_cpu_offload",
           "at most one of optim_cpu_offload, full_offload, fsdp_cpu_offload" +
               (optim ? " (" + optim_cpu_offload_on(f) + ": write optim_cpu_offload = false)"
                      : std::string()));
  }
  if (full && optimizer == "muon")
    f.fail("model", "full_offload", "prime-rl takes full_offload only with adamw and sign_sgd");
  if (fsdp && optimizer == "muon")
    f.fail("model", "fsdp_cpu_offload", "prime-rl rejects fsdp_cpu_offload with muon");
  if (fsdp) {
    warn_at(f, tc, "model", "fsdp_cpu_offload",
            "planned as muonplan's full offload (state and masters in host RAM)");
  }
  const std::string mode = full || fsdp || !ours.empty() ? "full" : optim ? "optimizer" : "none";
  const char* key = full ? "full_offload" : fsdp ? "fsdp_cpu_offload" : "optim_cpu_offload";
  tc.values.push_back(f.value("offload", mode, ours.empty() ? "model" : "muonplan",
                              ours.empty() ? key : "offload"));
  if (mode == "optimizer" && !f.get("model", "optim_cpu_offload"))
    tc.notes.push_back(f.field("model", "optim_cpu_offload") +
                       " = true (prime-rl's default): offload optimizer");
  return mode;
}

void read_muonplan_keys(const TrainerFile& f, TrainerConfig& tc) {
  const std::pair<const char*, const char*> keys[] = {{"bf16_momentum", "bf16-momentum"},
                                                      {"nesterov", "nesterov"},
                                                      {"update_rms", "update-rms"},
                                                      {"adamw_lr", "adamw-lr"},
                                                      {"adamw_weight_decay", "adamw-weight-decay"},
                                                      {"owners", "owners"},
                                                      {"offload_staging", "offload-staging"},
                                                      {"pinned_state", "pinned-state"},
                                                      {"include_mtp", "include-mtp"},
                                                      {"gpu_memory_gib", "gpu-memory-gib"},
                                                      {"host_ram_gib", "host-ram-gib"}};
  for (auto [key, flag] : keys) {
    const TomlNode* n = f.get("muonplan", key);
    if (!n) continue;
    const std::string text = n->kind == TomlNode::Kind::string ? f.string("muonplan", key, "")
                             : n->is_number()                  ? num(n->number())
                                                               : n->shown();
    tc.values.push_back(f.value(flag, text, "muonplan", key));
  }
  const std::string schedule = f.string("muonplan", "ns_schedule", "");
  const TomlNode* coeffs = f.get("muonplan", "newton_schulz_coefficients");
  if (schedule == "custom") {
    std::string list;
    bool ok = coeffs && coeffs->kind == TomlNode::Kind::array && !coeffs->items.empty();
    for (size_t i = 0; ok && i < coeffs->items.size(); ++i) {
      const TomlNode& step = coeffs->items[i];
      ok = step.kind == TomlNode::Kind::array && step.items.size() == 3;
      for (size_t j = 0; ok && j < 3; ++j) {
        ok = step.items[j].is_number();
        if (ok) list += (j ? "," : i ? ";" : "") + num(step.items[j].number());
      }
    }
    if (!ok)
      f.fail("muonplan", "ns_schedule",
             "\"custom\" needs newton_schulz_coefficients = [[a, b, c], ...]");
    tc.values.push_back(f.value("ns-schedule", list, "muonplan", "ns_schedule"));
  } else if (!schedule.empty()) {
    tc.values.push_back(f.value("ns-schedule", schedule, "muonplan", "ns_schedule"));
  }
}

// prime-rl's optimizer configs forbid extra keys: a key of another type (sgd's nesterov under
// muon) fails there, so it fails here. Muon settings prime-rl main lacks are refused too,
// naming the change that would add them and the comment muonplan reads meanwhile.
void refuse_foreign_keys(const TrainerFile& f, const std::string& type) {
  const std::pair<const char*, const char*> own[] = {{"mu", "muon"},
                                                     {"betas1", "adamw, muon"},
                                                     {"betas2", "adamw, muon"},
                                                     {"momentum", "sgd"},
                                                     {"nesterov", "sgd"}};
  const std::string prime_type = type == "signsgd" ? "sign_sgd" : type;
  for (auto [key, types] : own) {
    if (f.get("optim", key) && std::string(types).find(prime_type) == std::string::npos)
      f.fail("optim", key,
             "not a key of type = \"" + prime_type + "\" (only " + types +
                 "); prime-rl forbids extra keys");
  }
  for (const char* key : {"bf16_momentum", "update_rms", "newton_schulz_coefficients"}) {
    if (f.get("optim", key))
      f.fail("optim", key,
             std::string("prime-rl main has no such key and forbids extra keys; it needs a "
                         "MuonConfig field passed on to dion's Muon (") +
                 key + "); until prime-rl adds it, write `# muonplan: " + key + " = ...`");
  }
}

}  // namespace

void read_offload_and_optimizer(const TrainerFile& f, TrainerConfig& tc) {
  std::string type = f.string("optim", "type", "adamw");
  if (type == "sign_sgd") type = "signsgd";
  if (type == "sgd") f.fail("optim", "type", "muonplan plans muon, adamw and sign_sgd, not sgd");
  if (type != "muon" && type != "adamw" && type != "signsgd")
    f.fail("optim", "type", "expected adamw, muon, sign_sgd or sgd, got '" + type + "'");
  tc.values.push_back(f.value("optimizer", type, "optim", "type"));
  if (!f.get("optim", "type"))
    tc.notes.push_back(f.field("optim", "type") + " = adamw (prime-rl's default)");
  // prime-rl keeps an offloaded optimizer state in pinned host memory (--pinned-state); a
  // `# muonplan: pinned_state` comment says otherwise.
  if (read_offload(f, tc, type) == "optimizer" && !f.get("muonplan", "pinned_state"))
    tc.values.push_back(f.value("pinned-state", "true", "model", "optim_cpu_offload"));
  const std::string lr = num(f.number("optim", "lr", 1e-6));
  // Later schemas write weight_decay = "auto": 0.0 for RL, 0.01 for SFT.
  const TomlNode* wd_node = f.get("optim", "weight_decay");
  const bool wd_auto = wd_node && wd_node->kind == TomlNode::Kind::string && wd_node->str == "auto";
  const std::string wd =
      num(wd_auto ? (f.sft() ? 0.01 : 0.0) : f.number("optim", "weight_decay", 0.01));
  const double beta2 = type == "muon" ? 0.95 : 0.999;
  const std::string betas =
      num(f.number("optim", "betas1", 0.9)) + "," + num(f.number("optim", "betas2", beta2));
  if (type == "adamw") {
    tc.values.push_back(f.value("adamw-lr", lr, "optim", "lr"));
    tc.values.push_back(f.value("adamw-weight-decay", wd, "optim", "weight_decay"));
    tc.values.push_back(
        f.value("adamw-betas", betas, "optim", f.get("optim", "betas1") ? "betas1" : "betas2"));
  } else {
    tc.values.push_back(f.value("lr", lr, "optim", "lr"));
    tc.values.push_back(f.value("weight-decay", wd, "optim", "weight_decay"));
  }
  if (type == "muon") {
    tc.values.push_back(f.value("momentum", num(f.number("optim", "mu", 0.95)), "optim", "mu"));
    tc.values.push_back(
        f.value("adamw-betas", betas, "optim", f.get("optim", "betas1") ? "betas1" : "betas2"));
    if (!f.get("muonplan", "adamw_weight_decay"))  // dion's AdamW group takes the same decay
      tc.values.push_back(f.value("adamw-weight-decay", wd, "optim", "weight_decay"));
  }
  refuse_foreign_keys(f, type);
  read_muonplan_keys(f, tc);
}

// Keys that move memory or time and that muonplan does not model yet: a warning naming the key
// and the figure it moves, so the plan never silently stands for a different run. ([model]
// lora and attn are read into the plan by their own readers.)
void warn_unmodelled(const TrainerFile& f, TrainerConfig& tc) {
  auto warn = [&](const std::string& key, const std::string& message) {
    warn_at(f, tc, "model", key, message);
  };
  if (const TomlNode* q = f.get("model", "quantization"); q && q->kind == TomlNode::Kind::table) {
    const TomlNode* type = q->get("type");
    const std::string what = type && type->kind == TomlNode::Kind::string ? type->str : "?";
    warn("quantization", what +
                             " weights and GEMMs are not modelled: planned in bf16, so GPU "
                             "peak (weights, activations) and step time are those of bf16");
  }
  if (f.boolean("model", "fp8", false))
    warn("fp8", "fp8 GEMMs are not modelled: planned in bf16, so step time is that of bf16");
  if (f.get("model", "tp") && f.integer("model", "tp", 1) > 1)
    warn("tp",
         "tensor parallelism is not modelled: planned as tp 1 over FSDP, so GPU peak "
         "(weights, activations) and step time (TP traffic) are those of tp 1");
  if (!f.boolean("model", "moe_use_grouped_mm", true))
    warn("moe_use_grouped_mm",
         "false (a loop over experts) is not modelled: step time is planned for grouped GEMMs, "
         "a lower bound");
}

}  // namespace muonplan::detail
