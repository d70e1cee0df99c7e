// muonplan plan: choose nodes and offload mode for a model on a topology, print the decision
// and the predicted costs, write the Plan JSON.
#include <cstdio>
#include <fstream>
#include <iostream>

#include "commands.h"
#include "muonplan/error.h"
#include "muonplan/model_io.h"
#include "muonplan/plan.h"

namespace muonplan::cli {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct PlanFlags {
  std::string model, topology = default_topology_path(), nodes = "auto", layout;
  std::string optimizer = "muon", offload = "auto", staging = "whole", schedule = "quintic";
  std::string owners = "balanced", workload, ac = "full", out;
  int gpus_per_node = 0, max_nodes = 0;
  int64_t tokens_per_step = 0, seq_len = 0, micro_batch_seqs = 1;
  bool ac_offload = false, bf16_momentum = false, nesterov = false, pinned_state = false;
  bool include_mtp = false, json = false, explain = false;
  double gpu_memory_gib = 0, host_ram_gib = 0;
  OptimizerHyper hyper;
};

int parse_positive_int(const std::string& text, const std::string& flag) {
  size_t used = 0;
  int v = 0;
  try {
    v = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || v <= 0) {
    throw InputError({}, flag, "expected a positive integer or auto, got '" + text + "'");
  }
  return v;
}

PlanRequest to_request(const PlanFlags& f) {
  PlanRequest r;
  PlanOptions& o = r.options;
  r.auto_nodes = f.nodes == "auto";
  if (!r.auto_nodes) o.nodes = parse_positive_int(f.nodes, "--nodes");
  r.auto_offload = f.offload == "auto";
  if (!r.auto_offload) o.offload = parse_offload(f.offload);
  r.max_nodes = f.max_nodes;
  o.gpus_per_node = f.gpus_per_node;
  if (!f.layout.empty()) o.layout = parse_layout(f.layout);
  o.optimizer = parse_optimizer(f.optimizer);
  if (f.staging != "whole" && f.staging != "chunked") {
    throw InputError({}, "--offload-staging", "expected whole or chunked, got '" + f.staging + "'");
  }
  o.optimizer_staging = f.staging == "whole" ? OffloadStaging::whole : OffloadStaging::chunked;
  o.pinned_host_state = f.pinned_state;
  o.bf16_momentum = f.bf16_momentum;
  o.hyper = f.hyper;
  for (auto [name, v] : {std::pair{"--lr", f.hyper.lr}, {"--momentum", f.hyper.momentum}}) {
    if (!(v > 0)) throw InputError({}, name, "must be positive");
  }
  if (f.hyper.weight_decay < 0) throw InputError({}, "--weight-decay", "must not be negative");
  o.nesterov = f.nesterov;
  o.schedule = ns_schedule(f.schedule);
  o.owners = parse_owner_strategy(f.owners);
  o.gpu_memory_gib = f.gpu_memory_gib;
  o.host_ram_gib = f.host_ram_gib;
  o.include_mtp = f.include_mtp;
  if (!f.workload.empty()) {
    o.workload = load_workload(f.workload);
  } else if (f.tokens_per_step > 0 || f.seq_len > 0) {
    if (f.tokens_per_step <= 0 || f.seq_len <= 0) {
      throw InputError({}, "--tokens-per-step",
                       "a workload needs both --tokens-per-step and --seq-len");
    }
    if (f.ac != "full" && f.ac != "none") {
      throw InputError({}, "--ac", "expected full or none, got '" + f.ac + "'");
    }
    o.workload =
        Workload{f.tokens_per_step, f.seq_len, f.micro_batch_seqs, f.ac == "full", f.ac_offload};
  }
  if (r.options.nesterov && !r.auto_offload && o.offload == OffloadMode::full) {
    throw InputError({}, "--nesterov", "Nesterov momentum is not supported under full offload");
  }
  return r;
}

void print_terms(const char* title, const std::vector<Term>& terms, double scale,
                 const char* unit) {
  if (terms.empty()) return;
  std::printf("  %s\n", title);
  for (const Term& t : terms) {
    std::printf("    %-30s %12.4f %-4s %s\n", t.name.c_str(), t.value / scale, unit,
                t.formula.c_str());
  }
}

void print_plan(const Plan& plan, bool explain) {
  const PlanOptions& o = plan.options;
  const Prediction& p = plan.predicted;
  std::printf("muonplan plan: %s on %s (%d GPUs per node), optimizer %s, owners %s\n",
              plan.model_name.c_str(), plan.topology_name.c_str(), plan.gpus_per_node,
              to_string(o.optimizer), to_string(o.owners));
  std::printf("limits: GPU %.1f GiB, host RAM %.0f GiB per node\n\n", p.gpu_limit_bytes / kGiB,
              p.host_limit_bytes / kGiB);
  std::printf("%5s  %-9s  %-4s  %12s  %14s  %10s  %10s\n", "nodes", "offload", "fits",
              "GPU peak GiB", "host GiB/node", "step s", "GPU-s");
  for (const Candidate& c : plan.candidates) {
    if (!c.evaluated) {
      std::printf("%5d  %-9s  %-4s  %s\n", c.nodes, to_string(c.offload), "-", c.note.c_str());
      continue;
    }
    const bool chosen = c.nodes == o.nodes && c.offload == o.offload;
    std::printf("%5d  %-9s  %-4s  %12.1f  %14.1f  %10.3f  %10.2f%s\n", c.nodes,
                to_string(c.offload), c.fits ? "yes" : "no", c.gpu_peak_gib,
                c.host_ram_per_node_gib, c.step_s, c.gpu_seconds, chosen ? "  <- chosen" : "");
  }
  std::printf("\ndecision: %s%s\n", plan.fits ? "" : "NO FIT: ", plan.reason.c_str());
  std::printf("chosen: %d node(s) x %d GPUs, layout %s, offload %s\n", o.nodes, plan.gpus_per_node,
              to_string(o.layout).c_str(), to_string(o.offload));
  std::printf("  GPU peak %.2f GiB (step transient %.2f GiB), host RAM %.1f GiB per node\n",
              p.gpu_peak_bytes() / kGiB, p.gpu_transient_bytes_total() / kGiB,
              p.host_bytes() / kGiB);
  std::printf("  all-to-all %.3f GB per rank (max), H2D %.2f GB, D2H %.2f GB per GPU\n",
              p.alltoall_bytes_per_rank_max / 1e9, p.h2d_bytes_per_gpu / 1e9,
              p.d2h_bytes_per_gpu / 1e9);
  std::printf("  optimizer step %.3f s", p.optimizer_step_s);
  if (p.training_step_s) std::printf(", training step %.3f s", *p.training_step_s);
  std::printf("\n");
  if (!explain) {
    std::printf("(--explain prints every term; --json the full plan)\n");
    return;
  }
  std::printf("\nterms (busiest rank / node):\n");
  print_terms("GPU persistent", p.gpu_persistent_bytes, kGiB, "GiB");
  print_terms("GPU step transient", p.gpu_transient_bytes, kGiB, "GiB");
  print_terms("GPU fixed", p.gpu_fixed_bytes, kGiB, "GiB");
  print_terms("GPU workload", p.gpu_workload_bytes, kGiB, "GiB");
  print_terms("host RAM per node", p.host_bytes_per_node, kGiB, "GiB");
  print_terms("traffic per GPU per step", p.comm_bytes, 1e9, "GB");
  print_terms("optimizer step", p.step_phases_s, 1, "s");
  print_terms("training step", p.training_terms_s, 1, "s");
}

}  // namespace

Runner add_plan(CLI::App& app) {
  auto f = std::make_shared<PlanFlags>();
  CLI::App* c = app.add_subcommand("plan", "Choose node count and offload mode; predict costs");
  c->add_option("--model", f->model, "YAML model spec or Hugging Face config.json")->required();
  c->add_option("--topology", f->topology, "Cluster description (YAML)")->capture_default_str();
  c->add_option("--nodes", f->nodes, "Node count, or auto")->capture_default_str();
  c->add_option("--max-nodes", f->max_nodes, "Upper bound for --nodes auto (default: topology)");
  c->add_option("--gpus-per-node", f->gpus_per_node, "Override the topology's GPUs per node");
  c->add_option("--layout", f->layout, "fsdp=F,cp=C,ep=E (default: FSDP over all ranks)");
  c->add_option("--optimizer", f->optimizer, "muon | adamw | signsgd")->capture_default_str();
  c->add_option("--offload", f->offload, "none | optimizer | full | auto")->capture_default_str();
  c->add_option("--offload-staging", f->staging,
                "optimizer offload: whole (state on GPU for the step) | chunked")
      ->capture_default_str();
  c->add_flag("--pinned-state", f->pinned_state, "optimizer offload: state in pinned host memory");
  c->add_flag("--bf16-momentum", f->bf16_momentum, "Keep Muon momentum in bf16");
  c->add_flag("--nesterov", f->nesterov, "Nesterov momentum (not with full offload)");
  c->add_option("--lr", f->hyper.lr, "Learning rate (carried to the executor)")
      ->capture_default_str();
  c->add_option("--momentum", f->hyper.momentum, "Muon momentum mu")->capture_default_str();
  c->add_option("--weight-decay", f->hyper.weight_decay, "Decoupled weight decay")
      ->capture_default_str();
  c->add_option("--update-rms", f->hyper.update_rms,
                "Update RMS scale (default: the schedule's, 0.2 or 0.18 for deepseek-v4)");
  c->add_option("--ns-schedule", f->schedule,
                "quintic | polar-express | jordan | deepseek-v4 | 'a,b,c;a,b,c;...'")
      ->capture_default_str();
  c->add_option("--owners", f->owners, "padded | restart | round-robin | balanced")
      ->capture_default_str();
  c->add_option("--workload", f->workload, "Workload YAML (tokens_per_step, seq_len, ...)");
  c->add_option("--tokens-per-step", f->tokens_per_step, "Global batch in tokens");
  c->add_option("--seq-len", f->seq_len, "Sequence length");
  c->add_option("--micro-batch-seqs", f->micro_batch_seqs, "Sequences per rank per micro step");
  c->add_option("--ac", f->ac, "Activation checkpointing: none | full")->capture_default_str();
  c->add_flag("--ac-offload", f->ac_offload, "Keep checkpointed activations in host RAM");
  c->add_option("--gpu-memory-gib", f->gpu_memory_gib, "GPU memory limit per GPU");
  c->add_option("--host-ram-gib", f->host_ram_gib, "Host RAM limit per node");
  c->add_flag("--include-mtp", f->include_mtp, "Train the multi-token-prediction layers too");
  c->add_flag("--json", f->json, "Print the plan as JSON");
  c->add_flag("--explain", f->explain, "Print every named term");
  c->add_option("--out", f->out, "Write the plan JSON to this file");
  return [f]() {
    const ModelSpec spec = load_model(f->model);
    const Topology topo = load_topology(f->topology);
    const Plan plan = make_plan(spec, topo, to_request(*f));
    const nlohmann::json j = plan_to_json(plan);
    if (!f->out.empty()) {
      std::ofstream out(f->out);
      if (!out) throw std::runtime_error("cannot write " + f->out);
      out << j.dump(1) << "\n";
    }
    if (f->json) {
      std::cout << j.dump(2) << "\n";
    } else {
      print_plan(plan, f->explain);
    }
    return 0;
  };
}

}  // namespace muonplan::cli
