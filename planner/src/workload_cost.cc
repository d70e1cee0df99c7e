// Workload terms. Activation bytes follow Korthikanti et al. ("Reducing Activation
// Recomputation in Large Transformer Models", 2022) with flash attention (no s^2 score
// tensors) and SwiGLU/MoE MLPs; compute follows the 6 N T rule plus causal attention.
#include <algorithm>
#include <map>

#include "muonplan/error.h"
#include "workload_cost.h"

namespace muonplan {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double attention_dims(const ModelSpec& s, double* qk_per_head, double* v_per_head) {
  const AttentionSpec& a = s.attention;
  if (a.kind == AttentionKind::mla) {
    *qk_per_head = double(a.qk_nope_head_dim + a.qk_rope_head_dim);
    *v_per_head = double(a.v_head_dim);
  } else {
    *qk_per_head = *v_per_head = double(a.head_dim);
  }
  return double(a.num_heads);
}

// Activation bytes of one layer for t tokens without recomputation.
double layer_activation_bytes(const ModelSpec& s, int64_t layer, double t) {
  const double h = double(s.hidden_size);
  double qk = 0, v = 0;
  const double heads = attention_dims(s, &qk, &v);
  // Norm inputs, q/k/v, attention output, fp32 softmax statistics.
  double bytes = 2 * 2 * t * h + 2 * t * heads * (2 * qk + v) + 2 * t * heads * v + 4 * t * heads;
  if (s.is_moe_layer(layer)) {
    const double k = double(std::max<int64_t>(1, s.moe.experts_per_token));
    const double f = double(s.moe.intermediate_size), fs = double(s.moe.shared_intermediate_size);
    bytes += 2 * t * k * h + 6 * t * k * f + 6 * t * fs + 4 * t * s.moe.num_experts + 2 * t * h;
  } else {
    bytes += 2 * t * h + 6 * t * double(s.intermediate_size);
  }
  return bytes;
}

}  // namespace

void add_workload_terms(const ModelSpec& s, const ParamInventory& inv, const Topology& topo,
                        const PlanOptions& o, const ChunkPlan& plan, double local_params,
                        Prediction& p) {
  const Workload& w = *o.workload;
  if (s.moe.num_experts > 0 && s.moe.experts_per_token == 0) {
    throw InputError({}, "moe.experts_per_token",
                     "model " + s.name +
                         " does not say how many experts each token uses; a "
                         "workload needs it");
  }
  const int world = plan.world;
  const int gpn = o.gpus_per_node > 0 ? o.gpus_per_node : topo.node.gpus;
  const Layout& l = plan.layout;
  const double t = double(w.seq_len) / l.cp * double(w.micro_batch_seqs);
  const double h = double(s.hidden_size);
  const int64_t layers = s.num_layers + (o.include_mtp ? s.mtp_layers : 0);

  // Per-layer parameters gathered by FSDP: non-expert ones whole, experts of one EP slice.
  std::map<int64_t, double> gathered;
  double dense_active = 0, expert_total = 0, non_expert = 0;
  for (const ParamTensor& pt : inv.tensors) {
    if (pt.mtp && !o.include_mtp) continue;
    const double n = double(pt.numel());
    if (pt.layer >= 0) gathered[pt.layer] += pt.stack_dim == 0 ? n / l.ep : n;
    if (pt.stack_dim == 0 || pt.routed_expert) {
      expert_total += n;
    } else {
      non_expert += n;
      if (pt.name != "model.embed_tokens.weight") dense_active += n;
    }
  }
  double max_layer = 0;
  for (const auto& [layer, n] : gathered) max_layer = std::max(max_layer, n);

  double act_max = 0;
  for (int64_t i = 0; i < layers; ++i) act_max = std::max(act_max, layer_activation_bytes(s, i, t));
  const double stored_inputs = double(layers) * 2 * t * h;
  if (w.ac_full) {
    p.gpu_workload_bytes.push_back(
        {"checkpointed_layer_inputs", w.ac_offload ? 2 * 2 * t * h : stored_inputs,
         w.ac_offload ? "2 layers' bf16 inputs (the rest offloaded to host)"
                      : "bf16 input of every layer (full AC)"});
    p.gpu_workload_bytes.push_back(
        {"recomputed_layer_activations", 2 * act_max, "one layer recomputed, and its gradients"});
  } else {
    double all = 0;
    for (int64_t i = 0; i < layers; ++i) all += layer_activation_bytes(s, i, t);
    p.gpu_workload_bytes.push_back({"activations", all, "every layer's activations (no AC)"});
  }
  p.gpu_workload_bytes.push_back(
      {"logits", t * double(s.vocab_size) * 10, "bf16 logits, fp32 upcast and fp32 gradient"});
  p.gpu_workload_bytes.push_back(
      {"gathered_layer_weights", 2 * 2 * max_layer, "bf16 weights of 2 layers (one prefetched)"});
  p.gpu_workload_bytes.push_back({"unsharded_layer_grads", 4 * max_layer,
                                  "fp32 gradients of one layer before reduce-scatter"});
  if (w.ac_full && w.ac_offload) {
    p.host_bytes_per_node.push_back(
        {"ac_offload", stored_inputs * gpn, "checkpointed layer inputs of the node's ranks"});
  }

  // FSDP traffic per GPU: all-gather bf16 weights twice (forward, backward), reduce-scatter
  // fp32 grads, over the non-expert group (fsdp) and the expert group (world / ep).
  const double f = double(l.fsdp), de = double(world / l.ep);
  const double ag = 2 * 2 * non_expert * (f - 1) / f + 2 * 2 * expert_total / l.ep * (de - 1) / de;
  const double rs = 4 * non_expert * (f - 1) / f + 4 * expert_total / l.ep * (de - 1) / de;
  p.comm_bytes.push_back({"fsdp_all_gather", ag, "bf16 weights, forward and backward"});
  p.comm_bytes.push_back({"fsdp_reduce_scatter", rs, "fp32 gradients"});
  const Calibration& cal = topo.calibration;
  const double link_gbps = (l.fsdp > gpn || (world / l.ep > 1 && world > gpn))
                               ? topo.node.nic_gbps
                               : topo.node.nvlink_gbps;
  const double fsdp_s = (ag + rs) / (std::max(1e-9, link_gbps) * 1e9 * cal.link_efficiency);

  // Compute: 6 N T (8 N T with full recomputation), N the active matmul params; plus causal
  // attention, 6 * L * s * heads * (qk + v) / 2 per token (x4/3 when recomputed).
  const double k = s.moe.num_experts > 0 ? double(std::max<int64_t>(1, s.moe.experts_per_token)) /
                                               double(s.moe.num_experts)
                                         : 0;
  const double active = dense_active + expert_total * k;
  double qk = 0, v = 0;
  const double heads = attention_dims(s, &qk, &v);
  const double recompute = w.ac_full ? 4.0 / 3.0 : 1.0;
  const double per_token =
      (6 * active + 6 * double(layers) * double(w.seq_len) * heads * (qk + v) / 2) * recompute;
  const double flops_per_rank = per_token * double(w.tokens_per_step) / world;
  const double compute_s =
      flops_per_rank / (topo.node.gpu.bf16_tflops * 1e12 * cal.model_flops_utilization);
  const double ac_s =
      w.ac_full && w.ac_offload
          ? 2 * stored_inputs / (topo.node.pcie_d2h_gbps * 1e9 * cal.pcie_efficiency)
          : 0;
  p.training_terms_s.push_back(
      {"forward_backward", compute_s, "model FLOPs / (peak x model_flops_utilization)"});
  p.training_terms_s.push_back({"exposed_fsdp_comm", std::max(0.0, fsdp_s - compute_s),
                                "FSDP traffic not hidden by compute"});
  p.training_terms_s.push_back(
      {"exposed_ac_offload", std::max(0.0, ac_s - compute_s), "AC offload traffic not hidden"});
  p.training_terms_s.push_back({"optimizer_step", p.optimizer_step_s, "after backward"});
  p.training_step_s = sum(p.training_terms_s);
  (void)local_params;
}

}  // namespace muonplan
