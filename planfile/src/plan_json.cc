// The Plan as JSON (docs/cli-contract.md). Bytes are reported in GiB (2^30) or GB (kGB) as the key
// says; every figure under predicted.breakdown is a named term with its formula.
#include <cmath>

#include "muonplan/base/io.h"
#include "muonplan/base/units.h"
#include "muonplan/planfile/fit_scope.h"
#include "muonplan/planfile/plan_checks.h"
#include "muonplan/planfile/plan_file.h"
#include "muonplan/planfile/prediction_terms.h"

namespace muonplan {
namespace {

using json = nlohmann::json;

json terms(const std::vector<Term>& list, double scale, const char* unit) {
  json out = json::array();
  for (const Term& t : list) {
    out.push_back({{"name", t.name}, {unit, t.value / scale}, {"formula", t.formula}});
  }
  return out;
}

json shard_json(const ShardRule& r) {
  json j = {{"kind", enum_name(kShardKindNames, r.kind)}};
  if (r.kind == ShardRule::Kind::row_sharded) j["group_size"] = r.group_size;
  if (r.kind == ShardRule::Kind::stack_sharded) {
    j["ep"] = r.ep;
    j["dp"] = r.dp;
  }
  return j;
}

json chunk_json(const Plan& plan, const Chunk& c) {
  json j;
  j["kind"] = Chunk::kind_name(c.kind);
  j["rows"] = c.rows;
  j["cols"] = c.cols;
  j["params"] = c.params;
  if (c.kind == Chunk::Kind::muon_batch) {
    j["count"] = c.matrices.size();
    j["shard_group"] = {{"size", c.group_size}, {"dim", 0}};
    j["owners"] = c.owners;
    j["padding"] = c.padding;
    json mats = json::array();
    for (const MatrixRef& m : c.matrices) {
      mats.push_back({{"tensor", plan.inventory.tensors[m.tensor].name},
                      {"partition", m.partition},
                      {"row_offset", m.row_offset}});
    }
    j["matrices"] = mats;
    // Each owner orthogonalizes its one matrix of the batch.
    j["predicted_ns_ms"] = 1e3 * c.predicted_ns_s;
  } else if (c.kind == Chunk::Kind::muon_local) {
    const int64_t count = c.local.max();
    j["count"] = count;
    j["predicted_ns_ms"] = 1e3 * c.predicted_ns_s;
    j["shard_group"] = {{"size", 1}, {"dim", "stack"}};
    // The rule giving each rank's matrices (chunks.h): a few numbers at any world size.
    if (c.local.stacked) {
      j["local"] = {
          {"rule", "stack"}, {"entries", c.local.entries}, {"ep", c.local.ep}, {"dp", c.local.dp}};
    } else {
      j["local"] = {{"rule", "replicated"}};
    }
    j["owners"] = json::array();
    j["matrices"] = {{{"tensor", plan.inventory.tensors[c.matrices[0].tensor].name},
                      {"partition", c.matrices[0].partition},
                      {"row_offset", c.matrices[0].row_offset}}};
  } else {
    j["count"] = c.param_names.size();
    j["shard_group"] = {{"size", plan.options.layout.fsdp}, {"dim", 0}};
    j["owners"] = json::array();
  }
  j["param_names"] = c.param_names;
  return j;
}

}  // namespace

json workload_to_json(const std::optional<Workload>& workload) {
  if (!workload) return nullptr;
  const Workload& w = *workload;
  json j = {{"tokens_per_step", w.tokens_per_step},
            {"seq_len", w.seq_len},
            {"micro_batch_seqs", w.micro_batch_seqs},
            {"ac", w.ac_selective ? "selective"
                   : w.ac_full    ? "full"
                                  : "none"},
            {"ac_offload", w.ac_offload},
            {"lm_head_chunk", w.lm_head_chunk},
            {"cp_style", to_string(w.cp_style)},
            {"optimization_dtype", dtype_name(w.master_bytes)},
            {"reduce_dtype", dtype_name(w.reduce_bytes)}};
  // Written only when chosen, so a plan of the default kernel reads as before.
  if (w.attention != AttentionKernel::auto_kernel) j["attention"] = to_string(w.attention);
  if (!w.trainer.empty()) {
    j["trainer"] = w.trainer;
    j["prime_rl_date"] = w.prime_rl_date;
  }
  if (!w.expert_load.empty()) j["expert_load"] = w.expert_load;
  // Written only when set, so a plan of full AC on every layer reads as before.
  if (w.ac_selective) j["ac_targets"] = w.ac_targets;
  if (w.ac_freq != 1) j["ac_freq"] = w.ac_freq;
  if (w.ac_max_inflight > 0) j["ac_max_inflight"] = w.ac_max_inflight;
  if (!w.weight_broadcast.empty()) {
    j["weight_broadcast"] = w.weight_broadcast;
    j["inference_on_trainer_node"] = w.inference_on_trainer_node;
  }
  return j;
}

PredictedFigures predicted_figures(const Plan& plan) {
  const Prediction& p = plan.predicted;
  PredictedFigures f;
  f.gpu_peak_gib = p.gpu_peak_bytes() / kGiB;
  f.gpu_allocated_gib = p.gpu_allocated_bytes() / kGiB;
  f.gpu_reserved_gib = p.gpu_reserved_bytes() / kGiB;
  f.gpu_outside_allocator_gib = sum(p.gpu_fixed_bytes) / kGiB;
  f.fit_margin = p.fit_margin();
  f.gpu_transient_gib = p.gpu_transient_bytes_total() / kGiB;
  f.host_ram_per_node_gib = p.host_bytes() / kGiB;
  f.alltoall_gb_per_rank_max = p.alltoall_bytes_per_rank_max / kGB;
  f.alltoall_bytes_per_rank_max = p.alltoall_bytes_per_rank_max;
  f.h2d_gb_per_gpu = p.h2d_bytes_per_gpu / kGB;
  f.d2h_gb_per_gpu = p.d2h_bytes_per_gpu / kGB;
  f.optimizer_step_s = p.optimizer_step_s;
  f.training_step_s = p.training_step_s;
  f.gpu_seconds_per_step = p.step_s() * plan.world;
  f.ns_flops_per_rank_max = plan.chunks.loads.max_flops();
  return f;
}

namespace {

// The optimizer's settings the executor runs.
json optimizer_config_json(const Plan& plan) {
  const PlanOptions& o = plan.options;
  json coeffs = json::array();
  for (const NsCoefficients& c : o.schedule.steps) coeffs.push_back({c.a, c.b, c.c});
  return {{"bf16_momentum", o.bf16_momentum},
          {"nesterov", o.nesterov},
          {"lr", o.hyper.lr},
          {"momentum", o.hyper.momentum},
          {"weight_decay", o.hyper.weight_decay},
          {"update_rms", o.hyper.update_rms_or(o.schedule)},
          {"adamw",
           {{"lr", o.hyper.adamw_lr_or_lr()},
            {"beta1", o.hyper.adamw_beta1},
            {"beta2", o.hyper.adamw_beta2},
            {"eps", o.hyper.adamw_eps},
            {"weight_decay", o.hyper.adamw_weight_decay}}},
          {"ns_schedule", o.schedule.name},
          {"newton_schulz_coefficients", coeffs},
          {"ns_norm_scale", o.schedule.norm_scale},
          {"batches_in_flight", plan.batches_in_flight},
          {"optimizer_offload_staging", to_string(o.optimizer_staging)},
          {"optimizer_offload_pinned", o.pinned_host_state}};
}

// kTermLists, so a report reads each list's label and unit from the plan it draws.
json terms_table_json() {
  json out = json::array();
  for (const TermList& l : kTermLists) {
    out.push_back(
        {{"group", to_string(l.sum)}, {"key", l.key}, {"label", l.label}, {"unit", l.unit}});
  }
  return out;
}

// The predicted figures, in the units the contract names, and their named terms.
json predicted_json(const Plan& plan) {
  const Prediction& p = plan.predicted;
  json pred = figures_to_json(predicted_figures(plan));
  json breakdown = json::object();
  for (const TermList& l : kTermLists)
    breakdown[l.key] = terms(p.*l.list, unit_scale(l.unit), l.unit);
  if (!p.gpu_allocated_peak_at.empty()) {
    breakdown["gpu_peak"] = {
        {"allocated_peak_at", p.gpu_allocated_peak_at},
        {"reserved_peak_at", p.gpu_reserved_peak_at},
        {"live_at_allocated_peak_gib", terms(p.gpu_live_at_peak_bytes, kGiB, "gib")}};
  }
  pred[metric::kBreakdown] = breakdown;
  return pred;
}

// Every trained tensor: its shape, update rule, partitions and shard.
json tensors_json(const Plan& plan) {
  const PlanOptions& o = plan.options;
  json tensors = json::array();
  for (size_t i = 0; i < plan.inventory.tensors.size(); ++i) {
    const ParamTensor& t = plan.inventory.tensors[i];
    if (t.mtp && !o.include_mtp) continue;
    json parts = json::array();
    for (const Partition& part : t.partitions)
      parts.push_back({{"name", part.name}, {"rows", part.rows}});
    tensors.push_back({{"name", t.name},
                       {"shape", t.shape},
                       {"rule", to_string(t.rule)},
                       {"partitions", parts},
                       {"stack_dim", t.stack_dim},
                       {"shard", shard_json(plan.shards.at(i))}});
  }
  return tensors;
}

// The candidates the search weighed, and why it chose the plan's.
json decision_json(const Plan& plan) {
  json cands = json::array();
  for (const Candidate& c : plan.candidates) {
    json cj = {{"nodes", c.nodes}, {"offload", to_string(c.offload)}, {"fits", c.fits}};
    if (!c.layout.empty()) cj["layout"] = c.layout;
    if (c.evaluated) {
      cj["gpu_peak_gib"] = c.gpu_peak_gib;
      cj["host_ram_per_node_gib"] = c.host_ram_per_node_gib;
      cj["step_s"] = c.step_s;
      cj["gpu_seconds"] = c.gpu_seconds;
      cj["fit_margin"] = c.fit_margin;
    } else {
      cj["note"] = c.note;
    }
    cands.push_back(cj);
  }
  return {{"candidates", cands}, {"reason", plan.reason}};
}

}  // namespace

json plan_to_json(const Plan& plan) {
  const PlanOptions& o = plan.options;
  const Prediction& p = plan.predicted;
  json j;
  j["schema"] = kPlanSchema;
  j["model"] = plan.model_name;
  j["topology"] = plan.topology_name;
  j["nodes"] = o.nodes;
  j["gpus_per_node"] = plan.gpus_per_node;
  j["world_size"] = plan.world;
  j["layout"] = {{"fsdp", o.layout.fsdp}, {"cp", o.layout.cp}, {"ep", o.layout.ep}};
  j["offload"] = to_string(o.offload);
  j["optimizer"] = to_string(o.optimizer);
  j["owners"] = to_string(o.owners);
  j["include_mtp"] = o.include_mtp;
  // LoRA (plan_options.h): written only when on, so plans without it read as before. Its
  // tensors are the adapters; the frozen base weights are the model's and are not listed.
  if (o.lora.rank > 0) {
    j["lora"] = {{"rank", o.lora.rank},
                 {"alpha", o.lora.alpha},
                 {"target_modules", o.lora.target_modules},
                 {"adapters", o.lora.adapters}};
    // Written only when fewer runs than slots train (--lora-active-runs), as plans read before.
    if (o.lora.active_runs_or() < o.lora.adapters) j["lora"]["active_runs"] = o.lora.active_runs;
  }
  // What forward/backward the plan covers; null: the optimizer step alone.
  j["workload"] = workload_to_json(o.workload);
  // The step's fitted constants' runs, or that this GPU kind has none (issue 49).
  if (o.workload)
    j["step_time_calibration"] =
        p.step_time_calibration.empty() ? "uncalibrated" : p.step_time_calibration;
  j["optimizer_config"] = optimizer_config_json(plan);
  // Whose memory the figures are, and the headroom the fit decision kept free.
  j["runtime"] = {{"name", to_string(o.runtime)},
                  {"gpu_headroom", p.gpu_headroom},
                  {"host_headroom", p.host_headroom}};
  j["fits"] = plan.fits;
  // fits (within the headroom), tight (within the limits, not the headroom) or does_not_fit.
  j["fit_verdict"] = {{"verdict", to_string(p.fit_verdict())},
                      {"gpu_headroom_used_gib", p.gpu_headroom_used_bytes() / kGiB}};
  j["fit_covers"] = fit_covers(o.workload.has_value());
  j["limits"] = {{"gpu_memory_gib", p.gpu_limit_bytes / kGiB},
                 {"host_ram_per_node_gib", p.host_limit_bytes / kGiB}};
  j["predicted"] = predicted_json(plan);
  // Every figure within kMaxMetric, the bound execute reads them by (read_plan_predicted): a
  // topology figure out of any hardware's range (hbm_gbps 1e-300) made figures past 1e18 (or
  // non-finite, written as null) that plan wrote and execute refused. (A negative fit margin
  // is a plan that does not fit, which plan writes and execute refuses as such.)
  for (const auto& [k, v] : j["predicted"].items()) {
    if (v.is_number() && !(std::abs(v.get<double>()) <= kMaxMetric)) {
      throw InputError({}, "--topology",
                       "the plan's predicted." + k + " would be " + json_brief(v) +
                           ", past 1e18: a figure of the topology is out of any hardware's range");
    }
  }
  j["terms"] = terms_table_json();
  json chunks = json::array();
  for (const Chunk& c : plan.chunks.chunks) chunks.push_back(chunk_json(plan, c));
  j["chunks"] = chunks;
  j["tensors"] = tensors_json(plan);
  j["decision"] = decision_json(plan);
  return j;
}

}  // namespace muonplan
