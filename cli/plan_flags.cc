// The plan flags, registered once for every command that plans (plan, report). CLI11 parses
// the typed ones, so its messages for malformed numbers stay what they were.
#include "commands.h"

namespace muonplan::cli {

void add_plan_flags(CLI::App* c, PlanFlags& f, bool search) {
  if (search) {
    c->add_option("--nodes", f.nodes, "Node count, or auto")->capture_default_str();
    c->add_option("--max-nodes", f.max_nodes, "Upper bound for --nodes auto (default: topology)");
  }
  c->add_option("--gpus-per-node", f.gpus_per_node, "Override the topology's GPUs per node");
  c->add_option("--layout", f.layout, "fsdp=F,cp=C,ep=E (default: FSDP over all ranks)");
  c->add_option("--optimizer", f.optimizer, "muon | adamw | signsgd")->capture_default_str();
  if (search) {
    c->add_option("--offload", f.offload, "none | optimizer | full | auto")->capture_default_str();
  }
  c->add_option("--offload-staging", f.staging,
                "optimizer offload: whole (state on GPU for the step) | chunked")
      ->capture_default_str();
  c->add_flag("--pinned-state", f.pinned_state, "optimizer offload: state in pinned host memory");
  c->add_flag("--bf16-momentum", f.bf16_momentum, "Keep Muon momentum in bf16");
  c->add_flag("--nesterov", f.nesterov, "Nesterov momentum (not with full offload)");
  c->add_option("--lr", f.hyper.lr, "Learning rate (carried to the executor)")
      ->capture_default_str();
  c->add_option("--momentum", f.hyper.momentum, "Muon momentum mu")->capture_default_str();
  c->add_option("--weight-decay", f.hyper.weight_decay, "Decoupled weight decay")
      ->capture_default_str();
  c->add_option("--update-rms", f.hyper.update_rms,
                "Update RMS scale (default: the schedule's, 0.2 or 0.18 for deepseek-v4)");
  c->add_option("--ns-schedule", f.schedule,
                "quintic | polar-express | jordan | deepseek-v4 | 'a,b,c;a,b,c;...'")
      ->capture_default_str();
  c->add_option("--owners", f.owners, "padded | restart | round-robin | balanced")
      ->capture_default_str();
  c->add_option("--workload", f.workload, "Workload YAML (tokens_per_step, seq_len, ...)");
  c->add_option("--tokens-per-step", f.tokens_per_step, "Global batch in tokens");
  c->add_option("--seq-len", f.seq_len, "Sequence length");
  c->add_option("--micro-batch-seqs", f.micro_batch_seqs, "Sequences per rank per micro step");
  c->add_option("--ac", f.ac, "Activation checkpointing: none | full")->capture_default_str();
  c->add_flag("--ac-offload", f.ac_offload, "Keep checkpointed activations in host RAM");
  c->add_option("--gpu-memory-gib", f.gpu_memory_gib, "GPU memory limit per GPU");
  c->add_option("--host-ram-gib", f.host_ram_gib, "Host RAM limit per node");
  c->add_flag("--include-mtp", f.include_mtp, "Train the multi-token-prediction layers too");
}

}  // namespace muonplan::cli
