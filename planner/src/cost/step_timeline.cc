// One rank's allocations through a training step, in the order a prime-rl FSDP2 step issues
// them (step_timeline.h; docs/planner.md, "The allocation timeline"). FSDP2's order follows its
// source (torch/distributed/fsdp/_fully_shard: _fsdp_param_group.py, _fsdp_collectives.py).
#include "cost/step_timeline.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "cost/activation_sizes.h"
#include "cost/gpu_persistent.h"
#include "cost/step_timeline_record.h"

#include "muonplan/planner/workload.h"

namespace muonplan {

const char* stream_name(int stream) {
  switch (stream) {
    case kAllGatherStream:
      return "all-gather";
    case kReduceScatterStream:
      return "reduce-scatter";
    default:
      return "default";
  }
}

void StepTimeline::phase(std::string p) {
  phases.push_back(prefix + std::move(p));
}

std::string TensorName::str() const {
  std::string s = layer == kNoLayer ? "" : timeline::layer_name(layer) + ".";
  s += head;
  if (owned) s += *owned;
  return s + mid + tail;
}

int StepTimeline::alloc(TensorName name, std::string_view kind, double bytes, int stream) {
  const int id = int(tensors.size());
  tensors.push_back({name, kind, int64_t(std::ceil(bytes)), stream});
  events.push_back({id, true, int(phases.size()) - 1});
  return id;
}

void StepTimeline::free(int tensor) {
  if (tensor >= 0) events.push_back({tensor, false, int(phases.size()) - 1});
}

TimelineTermList timeline_term_list(std::string_view kind, const TimelineInputs& in) {
  // The kinds record_persistent, post_backward and record_optimizer_step give what a rank
  // keeps between steps (a gradient shard of the first micro step lives to zero_grad).
  for (const char* k : {"params_fp32", "params_bf16", "params_master_bf16", "frozen_params",
                        "grads_fp32", "grads_bf16", "muon_momentum", "adamw_moments"}) {
    if (kind == k) return TimelineTermList::persistent;
  }
  if (kind == "adamw_foreach_temporaries") return TimelineTermList::transient;
  for (const Term& t : in.step_transient) {
    if (kind == t.name) return TimelineTermList::transient;
  }
  if (kind == "cublas_workspace") return TimelineTermList::runtime;
  return TimelineTermList::workload;
}

namespace timeline {

double FsdpUnit::unsharded() const {
  double n = 0;
  for (const FsdpParam& p : params) n += p.unsharded;
  return n;
}

double FsdpUnit::trained(bool shard) const {
  double n = 0;
  for (const FsdpParam& p : params) n += p.trains ? (shard ? p.shard : p.unsharded) : 0;
  return n;
}

namespace {
bool in_mlp(const std::string& name) {
  for (const char* k : {".mlp.", "expert", "post_attention_layernorm", ".moe.", "ffn"}) {
    if (name.find(k) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

double unsharded_elements(const ParamTensor& t, int ep) {
  return double(t.numel()) / (t.is_expert() ? ep : 1);
}

std::map<int64_t, FsdpUnit> fsdp_units(StepTimeline& tl, const ParamInventory& inv,
                                       const PlanOptions& o, int world, int rank) {
  std::map<int64_t, FsdpUnit> units;
  // (layer, trained) -> index of its stacked routed experts
  std::map<std::pair<int64_t, bool>, size_t> experts_at;
  // Trained tensors and LoRA's frozen base weights alike (param_inventory.h says which is
  // which); the adapters sit in their layer's unit, as prime-rl wraps each decoder layer.
  inv.for_each_weight([&](const ParamTensor& t, bool trains) {
    if (t.mtp && !o.include_mtp) return;
    const ShardRule sr = shard_rule(t, o.layout, world);
    const double shard = double(sr.range(t.shape[0], rank).size()) * double(t.numel() / t.shape[0]);
    const double unsharded = unsharded_elements(t, o.layout.ep);
    FsdpUnit& u = units[t.layer];
    u.layer = t.layer;
    // Only a training step's phases ask which block a parameter is in; without a workload the
    // name search was a quarter of the optimizer-step timeline's cost (one per search candidate).
    const bool mlp = o.workload && in_mlp(t.name);
    FsdpParam p{nullptr, unsharded, shard, t.rule == UpdateRule::muon, trains, mlp};
    if (t.routed_expert && t.stack_dim != 0) {
      auto [it, fresh] = experts_at.try_emplace({t.layer, trains}, u.params.size());
      if (fresh) {
        p.name = tl.keep(layer_name(t.layer) + (trains ? ".experts" : ".experts (frozen)"));
        u.params.push_back(p);
      } else {
        u.params[it->second].unsharded += unsharded;
        u.params[it->second].shard += shard;
      }
      return;
    }
    p.name = tl.keep(t.name);
    u.params.push_back(p);
  });
  return units;
}

TensorName layer_part(int64_t layer, const char* head, const char* mid) {
  return {.layer = layer, .head = head, .mid = mid};
}

TensorName param_name(const FsdpParam& p, const char* suffix) {
  return {.owned = p.name, .mid = suffix};
}

std::string layer_name(int64_t layer) {
  return layer < 0 ? std::string("root") : "layers." + std::to_string(layer);
}

// Model init: every parameter's shard is its own tensor; the cuBLAS workspace comes with the
// first GEMM.
void record_persistent(Recorder& r) {
  r.tl.phase("model init");
  for (const auto& [layer, u] : r.units) {
    for (const FsdpParam& p : u.params) {
      const ElemArray a = param_array(r.o, r.pol, p.trains);
      r.tl.alloc(param_name(p), a.name, p.shard * a.bytes);
    }
  }
  if (r.in.cublas_workspace_bytes > 0)
    r.tl.alloc({.head = "cublas_workspace"}, "cublas_workspace", r.in.cublas_workspace_bytes);
}

// An FSDP unit's all-gather output (bf16 flat buffer, all-gather stream).
int gather_flat(Recorder& r, const FsdpUnit& u) {
  return r.tl.alloc(layer_part(u.layer, "all_gather_output"), "fsdp2_all_gather_buffers",
                    2 * u.unsharded(), kAllGatherStream);
}

// Copy-out: each unsharded parameter its own bf16 tensor in the default stream.
std::vector<int> unshard(Recorder& r, const FsdpUnit& u) {
  std::vector<int> ids;
  for (const FsdpParam& p : u.params) {
    ids.push_back(
        r.tl.alloc(param_name(p, ".unsharded"), "gathered_layer_weights", 2 * p.unsharded));
  }
  return ids;
}

void free_all(Recorder& r, std::vector<int>& ids) {
  for (int id : ids) r.tl.free(id);
  ids.clear();
}

}  // namespace timeline

// Model init, then each step: its micro steps (forward, LM head, backward:
// step_timeline_phases.cc) and the optimizer step.

StepTimeline build_step_timeline(const ModelSpec& spec, const ParamInventory& inv,
                                 const PlanOptions& o, const ChunkPlan& plan,
                                 const TimelineInputs& in, int steps) {
  StepTimeline tl;
  // Capacity from the last timeline this thread built: a sweep builds hundreds of timelines of
  // nearly one size, and growing the vectors from empty each time (fresh pages, then copies)
  // was half of a trainer-config plan's time (perf record, qwen3-30b-a3b-rl.toml). A capacity
  // only: the timeline is the same whatever it is.
  thread_local size_t last_tensors = 0, last_events = 0, last_phases = 0;
  tl.tensors.reserve(last_tensors);
  tl.events.reserve(last_events);
  tl.phases.reserve(last_phases);
  const OffloadPolicy& pol = offload_policy(o.offload, o.optimizer_staging);
  using namespace timeline;
  Recorder r{tl, spec, o, pol, in, fsdp_units(tl, inv, o, plan.world, in.peak_rank)};
  if (o.workload) {
    const Workload& w = *o.workload;
    r.t = micro_step_tokens(w, o.layout);
  }
  record_persistent(r);
  const int64_t micro = o.workload ? micro_steps(*o.workload, plan.world, o.layout) : 0;
  for (int s = 0; s < steps; ++s) {
    tl.prefix = "step " + std::to_string(s + 1) + ": ";
    if (!o.workload) {
      // The optimizer step alone: gradients are there when it starts.
      r.tl.phase("backward (gradients in place)");
      for (const auto& [layer, u] : r.units) {
        for (const FsdpParam& p : u.params) {
          if (!p.trains) continue;
          const ElemArray g = grad_array(o, pol);
          r.grads.push_back(tl.alloc(param_name(p, ".grad"), g.name, p.shard * g.bytes));
        }
      }
    }
    for (int64_t m = 0; o.workload && m < std::min<int64_t>(micro, 2); ++m) {
      tl.prefix = "step " + std::to_string(s + 1) + ", micro step " + std::to_string(m + 1) + ": ";
      // With no optimizer step (LoRA, no active run) the first step's gradients stay: later
      // steps accumulate into them.
      record_micro_step(r, m == 0 && (s == 0 || timeline::runs_optimizer_step(o)));
    }
    tl.prefix = "step " + std::to_string(s + 1) + ": ";
    record_optimizer_step(r);
  }
  last_tensors = tl.tensors.size();
  last_events = tl.events.size();
  last_phases = tl.phases.size();
  return tl;
}

}  // namespace muonplan
