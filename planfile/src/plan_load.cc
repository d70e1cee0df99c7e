// Reading a plan back: the inverse of plan_to_json for what the executor runs. The executor
// trusts the chunks it loads (which rank owns which matrix, which rows each rank holds), so
// everything it would index with is checked here (the options and the decision) and in
// plan_load_tensors.cc (the tensors and chunks), reported as "FILE: field: message".
#include <string>

#include "muonplan/base/units.h"
#include "muonplan/planfile/plan_checks.h"
#include "plan_load_node.h"

namespace muonplan {
namespace {

using json = nlohmann::json;
using plan_load::Node;

// Nodes, GPUs per node, the world they make and the layout over it.
void read_world_and_layout(const Node& root, Plan& plan) {
  PlanOptions& o = plan.options;
  o.nodes = root["nodes"].integer(1);
  o.gpus_per_node = plan.gpus_per_node = root["gpus_per_node"].integer(1);
  // Per-rank tables (local matrices, loads) are sized by the world: bound it first.
  plan.world = root["world_size"].integer(1, kMaxWorldRanks);
  if (int64_t(o.nodes) * o.gpus_per_node != plan.world) {
    root["world_size"].fail(
        "expected nodes x gpus_per_node = " + std::to_string(int64_t(o.nodes) * o.gpus_per_node) +
        ", got " + std::to_string(plan.world));
  }
  const Node layout = root["layout"];
  layout.only({"fsdp", "cp", "ep"});
  o.layout.fsdp = layout["fsdp"].integer(1);
  o.layout.cp = layout["cp"].integer(1);
  o.layout.ep = layout["ep"].integer(1);
  const std::string w = "world_size " + std::to_string(plan.world);
  if (plan.world % o.layout.fsdp != 0) layout["fsdp"].fail("does not divide " + w);
  if (o.layout.fsdp % o.layout.cp != 0) layout["cp"].fail("does not divide fsdp");
  if (plan.world % o.layout.ep != 0) layout["ep"].fail("does not divide " + w);
}

// The learning rates, momentum, decays and AdamW's constants, as written; ranged later.
void read_hyper(const Node& c, OptimizerHyper& h) {
  // Ranges: check_optimizer_config (read_options), as `muonplan plan` checks its flags.
  // plan_to_json writes the resolved values; a zero update_rms or adamw lr would mean "use the
  // default" on the way back out, so the plan must say what it runs (> 0).
  h.lr = c["lr"].number();
  h.momentum = c["momentum"].number();
  h.weight_decay = c["weight_decay"].number();
  h.update_rms = c["update_rms"].number();
  const Node a = c["adamw"];
  a.only({"lr", "beta1", "beta2", "eps", "weight_decay"});
  h.adamw_lr = a["lr"].number();
  h.adamw_beta1 = a["beta1"].number();
  h.adamw_beta2 = a["beta2"].number();
  h.adamw_eps = a["eps"].number();
  h.adamw_weight_decay = a["weight_decay"].number();
}

// The Newton-Schulz schedule: its label and the coefficients that run.
NsSchedule read_ns_schedule(const Node& c) {
  // The coefficients are what runs; the name is a label (a preset's name also brings its
  // recommended update RMS, which only matters when update_rms is resolved again).
  NsSchedule s{c["ns_schedule"].string(), {}, 1.0, 0.2};
  for (const std::string& preset : ns_schedule_presets()) {
    if (preset == s.name) s.update_rms = ns_schedule(preset).update_rms;
  }
  const Node coeffs = c["newton_schulz_coefficients"];
  if (coeffs.size() == 0 || coeffs.size() > kMaxNsSteps)
    coeffs.fail(ns_steps_message(coeffs.size()));
  for (size_t i = 0; i < coeffs.size(); ++i) {
    const Node step = coeffs[i];
    if (step.size() != 3) step.fail("expected [a, b, c], got " + json_brief(step.raw()));
    s.steps.push_back({step[0].number(), step[1].number(), step[2].number()});
  }
  s.norm_scale = c["ns_norm_scale"].number();
  return s;
}

void read_options(const Node& root, Plan& plan) {
  PlanOptions& o = plan.options;
  read_world_and_layout(root, plan);
  o.offload = root["offload"].named(kOffloadModeNames);
  o.optimizer = root["optimizer"].named(kOptimizerNames);
  o.owners = root["owners"].named(kOwnerStrategyNames);
  // LoRA: absent in plans without it (and in plans older than the key).
  if (root.has("lora")) {
    const Node l = root["lora"];
    l.only({"rank", "alpha", "target_modules", "adapters", "active_runs"});
    o.lora.rank = l["rank"].integer(1);
    o.lora.alpha = l["alpha"].number();
    if (!(o.lora.alpha >= 0)) l["alpha"].fail("must not be negative (0: prime-rl's 32)");
    const Node targets = l["target_modules"];
    if (!targets.raw().is_array()) targets.fail("expected a list of module names");
    for (size_t i = 0; i < targets.size(); ++i)
      o.lora.target_modules.push_back(targets[i].string());
    o.lora.adapters = l["adapters"].integer(1, kMaxLoraAdapters);
    if (l.has("active_runs")) o.lora.active_runs = l["active_runs"].integer(0, o.lora.adapters);
    if (o.optimizer == OptimizerKind::muon)
      root["optimizer"].fail("muon with LoRA: the planner plans LoRA with adamw only");
  }

  const Node c = root["optimizer_config"];
  c.only({"bf16_momentum", "nesterov", "lr", "momentum", "weight_decay", "update_rms", "adamw",
          "ns_schedule", "newton_schulz_coefficients", "ns_norm_scale", "batches_in_flight",
          "optimizer_offload_staging", "optimizer_offload_pinned"});
  o.bf16_momentum = c["bf16_momentum"].boolean();
  o.nesterov = c["nesterov"].boolean();
  check_nesterov(o, c["nesterov"].field(), {root.path(), 0, 0});
  OptimizerHyper& h = o.hyper;
  read_hyper(c, h);
  o.schedule = read_ns_schedule(c);
  check_optimizer_config(h, o.schedule, root.path());

  o.optimizer_staging = c["optimizer_offload_staging"].named(kOffloadStagingNames);
  // One source: the offload policy's number for this mode and staging, which the cost model
  // predicted with; the file states it for its readers and may not differ.
  const Node flights = c["batches_in_flight"];
  plan.batches_in_flight = static_cast<int>(flights.integer(1, kMaxBatchesInFlight));
  if (plan.batches_in_flight != o.batches_in_flight()) {
    flights.fail(
        "expected " + std::to_string(o.batches_in_flight()) + ", the offload policy's for " +
        to_string(o.offload) + " with " + enum_name(kOffloadStagingNames, o.optimizer_staging) +
        " staging (the prediction assumed it), got " + std::to_string(plan.batches_in_flight));
  }
  // Where `optimizer` offload keeps the state: what the planner's PCIe rates assumed, so the
  // executor allocates it so (pageable when the file predates the key).
  if (c.has("optimizer_offload_pinned")) {
    o.pinned_host_state = c["optimizer_offload_pinned"].boolean();
  }
}

// What the planner decided and why: not needed to run, read when present.
void read_decision(const Node& root, Plan& plan) {
  if (root.has("model")) plan.model_name = root["model"].string();
  if (root.has("topology")) plan.topology_name = root["topology"].string();
  // The model's and topology's own rule (name_problem), where plan writes the names.
  for (const char* key : {"model", "topology"}) {
    if (!root.has(key)) continue;
    const std::string why = name_problem(root[key].string());
    if (!why.empty()) root[key].fail(why);
  }
  if (root.has("fits")) plan.fits = root["fits"].boolean();
  if (root.has("limits")) {
    const Node l = root["limits"];
    l.only({"gpu_memory_gib", "host_ram_per_node_gib"});
    plan.predicted.gpu_limit_bytes = l["gpu_memory_gib"].number(0) * kGiB;
    plan.predicted.host_limit_bytes = l["host_ram_per_node_gib"].number(0) * kGiB;
  }
  if (root.has("runtime")) {  // plans before the runtime profile: muonplan's, no headroom
    const Node r = root["runtime"];
    r.only({"name", "gpu_headroom", "host_headroom"});
    plan.options.runtime = r["name"].named(kRuntimeNames);
    plan.predicted.gpu_headroom = plan.options.gpu_headroom = r["gpu_headroom"].number(0);
    plan.predicted.host_headroom = plan.options.host_headroom = r["host_headroom"].number(0);
  }
  if (!root.has("decision")) return;
  const Node d = root["decision"];
  d.only({"candidates", "reason"});
  plan.reason = d["reason"].string();
  const Node cands = d["candidates"];
  for (size_t i = 0; i < cands.size(); ++i) {
    const Node n = cands[i];
    n.only({"nodes", "offload", "fits", "layout", "gpu_peak_gib", "host_ram_per_node_gib", "step_s",
            "gpu_seconds", "note", "fit_margin"});
    Candidate c;
    c.nodes = n["nodes"].integer(1);
    c.offload = n["offload"].named(kOffloadModeNames);
    c.fits = n["fits"].boolean();
    if (n.has("layout")) c.layout = n["layout"].string();
    c.evaluated = n.has("gpu_peak_gib");
    if (c.evaluated) {
      c.gpu_peak_gib = n["gpu_peak_gib"].number();
      c.host_ram_per_node_gib = n["host_ram_per_node_gib"].number();
      c.step_s = n["step_s"].number();
      c.gpu_seconds = n["gpu_seconds"].number();
      if (n.has("fit_margin")) c.fit_margin = n["fit_margin"].number();
    } else {
      c.note = n["note"].string();
    }
    plan.candidates.push_back(c);
  }
}

}  // namespace

Plan plan_from_json(const json& j, const std::string& path) {
  const Node root(path, j, "");
  const auto schema = j.is_object() ? j.find("schema") : j.end();
  if (!j.is_object() || schema == j.end() || *schema != kPlanSchema) {
    const std::string got = !j.is_object() || schema == j.end() ? ""
                            : schema->is_string()
                                ? printable(schema->get<std::string>().substr(0, 60))
                                : json_brief(*schema);
    const std::string older = got == "muonplan.plan/1"
                                  ? " (written by an older muonplan: plan again, or upgrade it "
                                    "with scripts/upgrade-plan-v1.py)"
                                  : "";
    throw InputError({path, 0, 0}, "schema",
                     std::string("expected ") + kPlanSchema + ", got '" + got + "'" + older);
  }
  root.only({"schema",
             "model",
             "topology",
             "nodes",
             "gpus_per_node",
             "world_size",
             "layout",
             "offload",
             "optimizer",
             "owners",
             "include_mtp",
             "workload",
             "optimizer_config",
             "fits",
             "limits",
             "predicted",
             "chunks",
             "tensors",
             "decision",
             "runtime",
             "fit_covers",
             "lora",
             "terms",
             "fit_verdict",
             "step_time_calibration"});
  if (root.has("workload") && !root["workload"].raw().is_null()) {
    root["workload"].only({"tokens_per_step", "seq_len", "micro_batch_seqs", "ac", "ac_offload",
                           "lm_head_chunk", "cp_style", "attention", "optimization_dtype",
                           "reduce_dtype", "trainer", "prime_rl_date", "expert_load", "ac_targets",
                           "ac_freq", "ac_max_inflight", "weight_broadcast",
                           "inference_on_trainer_node"});
  }
  read_plan_predicted(j, path);  // execute reads it again for the metrics
  Plan plan;
  read_decision(root, plan);
  read_options(root, plan);
  plan_load::read_inventory(root, plan);
  plan_load::read_chunks(root, plan);
  return plan;
}

Plan load_plan(const std::string& path) {
  const json j = read_json_file(path);
  return plan_from_json(j, path);
}

}  // namespace muonplan
