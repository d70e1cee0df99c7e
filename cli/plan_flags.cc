// The plan flags, registered once for every command that plans (plan, report). CLI11 parses
// the typed ones, so its messages for malformed numbers stay what they were.
#include "commands.h"
#include "paths.h"

namespace muonplan::cli {
namespace {

// A flag whose 0 means "not given" (the topology's or the schedule's value): set through
// set_plan_flag, which refuses a 0, negative or NaN given with the message the Python bindings
// give, where a plain binding could not tell a 0 given from none.
CLI::Option* add_positive(CLI::App* c, PlanFlags& f, const std::string& name,
                          const std::string& help, const char* type) {
  return c
      ->add_option_function<std::string>(
          "--" + name, [&f, name](const std::string& v) { set_plan_flag(f, name, v); }, help)
      ->type_name(type);
}

}  // namespace

void add_plan_flags(CLI::App* c, PlanFlags& f, bool search) {
  if (search) {
    c->add_option("--nodes", f.nodes, "Node count, or auto")->capture_default_str();
    add_positive(c, f, "max-nodes", "Upper bound for --nodes auto (default: topology)", "INT");
    add_positive(c, f, "max-predictions",
                 "--nodes auto predicts at most about this many candidates, then lists the "
                 "node counts left as not evaluated (default: " +
                     std::to_string(kDefaultMaxPredictions) + ")",
                 "INT");
  }
  add_positive(c, f, "gpus-per-node", "Override the topology's GPUs per node", "INT");
  c->add_option("--layout", f.layout, "fsdp=F,cp=C,ep=E (default: FSDP over all ranks)");
  c->add_option("--optimizer", f.optimizer, choices_help(enum_names(kOptimizerNames)))
      ->capture_default_str();
  if (search) {
    c->add_option("--offload", f.offload, choices_help(enum_names(kOffloadModeNames, {"auto"})))
        ->capture_default_str();
  }
  c->add_option("--offload-staging", f.staging,
                "optimizer offload: " + choices_help(enum_names(kOffloadStagingNames)) +
                    " (whole: the state on the GPU for the step)")
      ->capture_default_str();
  c->add_flag("--pinned-state", f.pinned_state, "optimizer offload: state in pinned host memory");
  c->add_flag("--bf16-momentum", f.bf16_momentum, "Keep Muon momentum in bf16");
  c->add_flag("--nesterov", f.nesterov, "Nesterov momentum (not with full offload)");
  c->add_option("--lr", f.hyper.lr, "Learning rate (carried to the executor)")
      ->capture_default_str();
  c->add_option("--momentum", f.hyper.momentum, "Muon momentum mu")->capture_default_str();
  c->add_option("--weight-decay", f.hyper.weight_decay, "Decoupled weight decay")
      ->capture_default_str();
  add_positive(c, f, "update-rms",
               "Update RMS scale (default: the schedule's, 0.2 or 0.18 for deepseek-v4)", "FLOAT");
  c->add_option("--adamw-lr", f.hyper.adamw_lr, "AdamW learning rate (default: --lr)");
  c->add_option("--adamw-weight-decay", f.hyper.adamw_weight_decay, "AdamW weight decay")
      ->capture_default_str();
  // Two numbers into two fields: CLI11 splits and converts them, with its own messages.
  c->add_option_function<std::vector<double>>(
       "--adamw-betas",
       [&f](const std::vector<double>& b) {
         f.hyper.adamw_beta1 = b[0];
         f.hyper.adamw_beta2 = b[1];
       },
       "AdamW betas b1,b2 (default: 0.9,0.95)")
      ->delimiter(',')
      ->expected(2);
  c->add_option("--ns-schedule", f.schedule,
                "quintic | polar-express | jordan | deepseek-v4 | 'a,b,c;a,b,c;...'")
      ->capture_default_str();
  c->add_option("--owners", f.owners, choices_help(enum_names(kOwnerStrategyNames)))
      ->capture_default_str();
  c->add_option("--workload", f.workload, "Workload YAML (tokens_per_step, seq_len, ...)")
      ->check(non_empty_path());
  c->add_option("--tokens-per-step", f.tokens_per_step, "Global batch in tokens");
  c->add_option("--seq-len", f.seq_len, "Sequence length");
  c->add_option("--micro-batch-seqs", f.micro_batch_seqs, "Sequences per rank per micro step");
  c->add_option("--ac", f.ac, "Activation checkpointing: none | full")->capture_default_str();
  c->add_flag("--ac-offload", f.ac_offload, "Keep checkpointed activations in host RAM");
  c->add_option("--lm-head-chunk", f.lm_head_chunk,
                "Fused LM head: tokens per logits chunk (0: unfused, whole-sequence logits)")
      ->capture_default_str();
  c->add_option("--cp-style", f.cp_style,
                "Context parallelism: " + choices_help(enum_names(kCpStyleNames)))
      ->capture_default_str();
  c->add_option("--attention", f.attention,
                "Attention kernel: " + choices_help(enum_names(kAttentionKernelNames)) +
                    " (auto: FA3 on SM90, FA2 elsewhere; default: the workload file's, else auto)");
  add_positive(c, f, "gpu-memory-gib", "GPU memory limit per GPU (default: the topology's)",
               "FLOAT");
  add_positive(c, f, "host-ram-gib", "Host RAM limit per node (default: the topology's)", "FLOAT");
  c->add_flag("--include-mtp", f.include_mtp, "Train the multi-token-prediction layers too");
  add_positive(c, f, "lora-rank",
               "LoRA: adapters of this rank on frozen bf16 base weights (with --optimizer adamw)",
               "INT");
  add_positive(c, f, "lora-alpha", "LoRA scaling alpha (default 32, prime-rl's)", "FLOAT");
  c->add_option("--lora-targets", f.lora_targets,
                "LoRA target modules a,b,c (default prime-rl's: q_proj,k_proj,v_proj,o_proj,"
                "gate_proj,up_proj,down_proj,experts)");
  add_positive(c, f, "lora-adapters",
               "LoRA adapter slots kept resident (prime-rl's max_concurrent_runs; default 1)",
               "INT");
  c->add_option("--runtime", f.runtime,
                "Memory of: muonplan (our executor, exact) | pytorch (FSDP2 + NCCL; the default "
                "with a workload)");
  c->add_option_function<std::string>(
       "--gpu-headroom", [&f](const std::string& v) { set_plan_flag(f, "gpu-headroom", v); },
       "Fraction of GPU memory the fit keeps free (default: 0.05 pytorch, 0 muonplan)")
      ->type_name("FLOAT");
  c->add_option_function<std::string>(
       "--host-headroom", [&f](const std::string& v) { set_plan_flag(f, "host-headroom", v); },
       "Fraction of host RAM the fit keeps free (default: 0.05 pytorch, 0 muonplan)")
      ->type_name("FLOAT");
  if (search) {  // report sweeps the nodes and offload such a file pins
    c->add_option("--trainer-config", f.trainer_config,
                  "prime-rl trainer config (RL or SFT TOML; docs/trainer-config.md)")
        ->check(non_empty_path());
    c->add_option("--prime-rl-version", f.prime_rl_version,
                  "The trainer config's prime-rl as a date YYYY-MM-DD: its defaults apply where "
                  "the file is silent (default: the newest known)");
  }
}

}  // namespace muonplan::cli
