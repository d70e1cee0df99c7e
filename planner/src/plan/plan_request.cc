// Plan flags to a PlanRequest: the one place the options of `muonplan plan` (and of the Python
// bindings) are checked.
#include "muonplan/planner/plan_request.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <type_traits>

#include "base/calendar_date.h"
#include "muonplan/base/checked_int.h"
#include "muonplan/base/enum_names.h"
#include "muonplan/base/error.h"
#include "muonplan/base/parse_int.h"
#include "muonplan/base/units.h"
#include "muonplan/planfile/chunk_plan.h"
#include "muonplan/planfile/plan_checks.h"
#include "muonplan/planner/layout.h"
#include "muonplan/planner/lora.h"
#include "muonplan/planner/plan_flag_table.h"
#include "muonplan/planner/workload.h"
#include "trainer_flags.h"
#include "workload_flags.h"

namespace muonplan {

std::string bad_nodes_message(const std::string& got) {
  return "expected a positive integer or auto, got '" + brief(got) + "'";
}

namespace {

std::string comma_list(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ",") + n;
  return s;
}

int parse_node_count(const std::string& text) {
  const std::optional<int64_t> v = parse_int(text, 1, std::numeric_limits<int>::max());
  if (!v) throw InputError({}, "--nodes", bad_nodes_message(text));
  return static_cast<int>(*v);
}

template <typename T>
T parse_number(const std::string& text, const std::string& flag, const char* what) {
  size_t used = 0;
  bool out_of_range = false;
  T v{};
  try {
    if constexpr (std::is_floating_point_v<T>) {
      // strtod, not stod: stod throws on a subnormal (5e-324), which is a number, and the
      // range checks that follow say what is wrong with it; past double's range is not one.
      char* end = nullptr;
      errno = 0;
      const double x = std::strtod(text.c_str(), &end);
      used = size_t(end - text.c_str());
      if (errno == ERANGE && std::isinf(x)) used = 0, out_of_range = true;
      v = static_cast<T>(x);
    } else {
      const std::optional<int64_t> x =
          parse_int(text, std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
      used = x ? text.size() : 0;
      v = static_cast<T>(x.value_or(0));
    }
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size()) {
    const char* range = out_of_range ? " within double's range (|x| below 1.8e308)" : "";
    throw InputError({}, flag,
                     std::string("expected ") + what + range + ", got '" + brief(text) + "'");
  }
  return v;
}

bool parse_bool(const std::string& text, const std::string& flag) {
  if (text == "true" || text == "1") return true;
  if (text == "false" || text == "0") return false;
  throw InputError({}, flag, "expected true or false, got '" + brief(text) + "'");
}

using Setter = std::function<void(PlanFlags&, const std::string& value, const std::string& flag)>;
using Getter = std::function<std::string(const PlanFlags&)>;
struct Access {
  Setter set;
  Getter get;        // for plan_flag_value: the value as set_plan_flag takes it back
  std::string type;  // PlanFlagInfo::type, from how the value is parsed
};

// Doubles at full precision, so equal text means equal values.
template <typename T>
std::string number_text(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", double(v));
    return buf;
  } else {
    return std::to_string(v);
  }
}

Access text(std::string PlanFlags::*field) {
  return {[field](PlanFlags& f, const std::string& v, const std::string&) { f.*field = v; },
          [field](const PlanFlags& f) { return f.*field; }, "TEXT"};
}
// A path: text, named PATH (the CLI refuses an empty one).
Access path(std::string PlanFlags::*field) {
  Access a = text(field);
  a.type = "PATH";
  return a;
}
Access boolean(bool PlanFlags::*field) {
  return {[field](PlanFlags& f, const std::string& v, const std::string& flag) {
            f.*field = parse_bool(v, flag);
          },
          [field](const PlanFlags& f) { return std::string(f.*field ? "true" : "false"); }, "BOOL"};
}
template <typename T>
Access number(T PlanFlags::*field, const char* what) {
  return {[field, what](PlanFlags& f, const std::string& v, const std::string& flag) {
            f.*field = parse_number<T>(v, flag, what);
          },
          [field](const PlanFlags& f) { return number_text(f.*field); },
          std::is_floating_point_v<T> ? "FLOAT" : "INT"};
}
Access hyper(double OptimizerHyper::*field) {
  return {[field](PlanFlags& f, const std::string& v, const std::string& flag) {
            f.hyper.*field = parse_number<double>(v, flag, "a number");
          },
          [field](const PlanFlags& f) { return number_text(f.hyper.*field); }, "FLOAT"};
}
// A flag whose 0 means "not given: the default" (the topology's GPUs per node or memory, the
// schedule's update RMS): a value given must be positive, so that 0, a negative or a NaN is
// refused rather than silently replaced by the default.
std::string positive_integer_message(int64_t v) {
  return "expected a positive integer, got '" + std::to_string(v) + "'";
}
Access positive_int(int PlanFlags::*field) {
  Access a = number(field, "an integer");
  a.set = [field](PlanFlags& f, const std::string& v, const std::string& flag) {
    const int x = parse_number<int>(v, flag, "an integer");
    if (x <= 0) throw InputError({}, flag, positive_integer_message(x));
    f.*field = x;
  };
  return a;
}
Access positive_double(double PlanFlags::*field) {
  Access a = number(field, "a number");
  a.set = [field](PlanFlags& f, const std::string& v, const std::string& flag) {
    const double x = parse_number<double>(v, flag, "a number");
    check_positive_finite(x, flag);
    f.*field = x;
  };
  return a;
}
Access positive_hyper(double OptimizerHyper::*field) {
  Access a = hyper(field);
  a.set = [field](PlanFlags& f, const std::string& v, const std::string& flag) {
    const double x = parse_number<double>(v, flag, "a number");
    check_positive_finite(x, flag);
    f.hyper.*field = x;
  };
  return a;
}
// Read back normalized: "fsdp=8" and "fsdp=8,cp=1,ep=1" are the same layout.
Access layout() {
  Access a = text(&PlanFlags::layout);
  a.get = [](const PlanFlags& f) {
    if (f.layout.empty()) return f.layout;
    try {
      return to_string(parse_layout(f.layout));
    } catch (const InputError&) {
      return f.layout;  // to_plan_request reports it
    }
  };
  return a;
}
// "b1,b2": one flag for both AdamW betas, as trainers' `betas` lists them.
Access adamw_betas() {
  return {[](PlanFlags& f, const std::string& v, const std::string& flag) {
            const size_t comma = v.find(',');
            if (comma == std::string::npos)
              throw InputError({}, flag, "expected b1,b2, got '" + brief(v) + "'");
            f.hyper.adamw_beta1 = parse_number<double>(v.substr(0, comma), flag, "a number");
            f.hyper.adamw_beta2 = parse_number<double>(v.substr(comma + 1), flag, "a number");
          },
          [](const PlanFlags& f) {
            return number_text(f.hyper.adamw_beta1) + "," + number_text(f.hyper.adamw_beta2);
          },
          "FLOAT,FLOAT"};
}

// A fraction of a limit kept free: in [0, 1).
Access headroom(double PlanFlags::*field) {
  Access a = number(field, "a number");
  a.set = [field](PlanFlags& f, const std::string& v, const std::string& flag) {
    const double x = parse_number<double>(v, flag, "a number");
    if (!(x >= 0 && x < 1))
      throw InputError({}, flag, "a fraction in [0, 1), got '" + brief(v) + "'");
    f.*field = x;
  };
  return a;
}

// --lora-active-runs: 0 is a value (no run has its optimizer yet); -1 is "not given".
Access active_runs() {
  Access a = number(&PlanFlags::lora_active_runs, "an integer");
  a.set = [](PlanFlags& f, const std::string& v, const std::string& flag) {
    const int x = parse_number<int>(v, flag, "an integer");
    if (x < 0) throw InputError({}, flag, "expected 0 or a positive integer, got '" + v + "'");
    f.lora_active_runs = x;
  };
  return a;
}

// One row per plan option, in the order `muonplan plan --help` lists them: its name, how it is
// parsed and read back, and what --help and Python's help() say of it (plan_flag_table.h).
struct Entry {
  std::string name;
  Access access;
  bool shows_default;  // false: 0 or empty means "not given", and the help says what applies
  std::string help;
  bool search_only = false;
};

// The search's and the optimizer's flags: the first part of the one flag table (setters()).
// The fit's headroom by runtime, as PlanOptions::gpu_headroom_or / host_headroom_or give it.
std::string headroom_defaults(bool gpu) {
  std::string out;
  for (RuntimeKind r : {RuntimeKind::pytorch, RuntimeKind::muonplan}) {
    PlanOptions o;
    o.runtime = r;
    out += (out.empty() ? "" : ", ") +
           sig_figs(gpu ? o.gpu_headroom_or() : o.host_headroom_or(), 6) + " " + to_string(r);
  }
  return out;
}

std::vector<Entry> search_and_optimizer_entries() {
  return {
      {"nodes", text(&PlanFlags::nodes), true, "Node count, or auto", true},
      {"max-nodes", positive_int(&PlanFlags::max_nodes), false,
       "Upper bound for --nodes auto (default: the topology's max_nodes)", true},
      {"max-predictions", positive_int(&PlanFlags::max_predictions), false,
       "--nodes auto predicts at most about this many candidates, then lists the node counts "
       "left as not evaluated (default: " +
           std::to_string(kDefaultMaxPredictions) + ")",
       true},
      {"gpus-per-node", positive_int(&PlanFlags::gpus_per_node), false,
       "Override the topology's GPUs per node"},
      {"layout", layout(), false, "fsdp=F,cp=C,ep=E (default: FSDP over all ranks)"},
      {"optimizer", text(&PlanFlags::optimizer), true, choices_help(enum_names(kOptimizerNames))},
      {"offload", text(&PlanFlags::offload), true,
       choices_help(enum_names(kOffloadModeNames, {"auto"})), true},
      {"offload-staging", text(&PlanFlags::staging), true,
       "optimizer offload: " + choices_help(enum_names(kOffloadStagingNames)) +
           " (whole: the state on the GPU for the step)"},
      {"pinned-state", boolean(&PlanFlags::pinned_state), false,
       "optimizer offload: state in pinned host memory"},
      {"bf16-momentum", boolean(&PlanFlags::bf16_momentum), false, "Keep Muon momentum in bf16"},
      {"nesterov", boolean(&PlanFlags::nesterov), false,
       "Nesterov momentum (not with full offload)"},
      {"lr", hyper(&OptimizerHyper::lr), true, "Learning rate (carried to the executor)"},
      {"momentum", hyper(&OptimizerHyper::momentum), true, "Muon momentum mu"},
      {"weight-decay", hyper(&OptimizerHyper::weight_decay), true, "Decoupled weight decay"},
      {"update-rms", positive_hyper(&OptimizerHyper::update_rms), false,
       "Update RMS scale (default: the schedule's, " +
           sig_figs(ns_schedule("quintic").update_rms, 6) + " or " +
           sig_figs(ns_schedule("deepseek-v4").update_rms, 6) + " for deepseek-v4)"},
      {"adamw-lr", hyper(&OptimizerHyper::adamw_lr), false, "AdamW learning rate (default: --lr)"},
      {"adamw-weight-decay", hyper(&OptimizerHyper::adamw_weight_decay), true,
       "AdamW weight decay"},
      {"adamw-betas", adamw_betas(), false,
       "AdamW betas b1,b2 (default: " + sig_figs(OptimizerHyper{}.adamw_beta1, 6) + "," +
           sig_figs(OptimizerHyper{}.adamw_beta2, 6) + ")"},
      {"ns-schedule", text(&PlanFlags::schedule), true,
       choices_help(ns_schedule_presets()) + " | 'a,b,c;a,b,c;...'"},
      {"owners", text(&PlanFlags::owners), true, choices_help(enum_names(kOwnerStrategyNames))},
  };
}

const std::vector<Entry>& setters() {
  static const std::vector<Entry> table = [] {
    std::vector<Entry> t = search_and_optimizer_entries();
    std::vector<Entry> rest = {
        {"workload", path(&PlanFlags::workload), false,
         "Workload YAML (tokens_per_step, seq_len, ...)"},
        {"tokens-per-step", number(&PlanFlags::tokens_per_step, "an integer"), false,
         "Global batch in tokens"},
        {"seq-len", number(&PlanFlags::seq_len, "an integer"), false, "Sequence length"},
        {"micro-batch-seqs", number(&PlanFlags::micro_batch_seqs, "an integer"), true,
         "Sequences per rank per micro step"},
        {"ac", text(&PlanFlags::ac), true,
         "Activation checkpointing: none | full | selective (prime-rl's modes: full recomputes "
         "each layer's forward; selective only its --ac-targets' functions)"},
        {"ac-targets", text(&PlanFlags::ac_targets), false,
         "Selective AC: targets, comma-separated, of norm, attn_proj, mlp, mla_up_proj, "
         "routed_experts, linear_attn (default: norm, as prime-rl)"},
        {"ac-freq", number(&PlanFlags::ac_freq, "an integer"), true,
         "AC (full or selective) on every N-th layer (0, N, 2N, ...); the others keep every "
         "activation"},
        {"ac-offload", boolean(&PlanFlags::ac_offload), false,
         "Keep checkpointed activations in host RAM"},
        {"lm-head-chunk", number(&PlanFlags::lm_head_chunk, "an integer"), true,
         "Fused LM head: tokens per logits chunk (0: unfused, whole-sequence logits)"},
        {"cp-style", text(&PlanFlags::cp_style), true,
         "Context parallelism: " + choices_help(enum_names(kCpStyleNames))},
        {"attention", text(&PlanFlags::attention), false,
         "Attention kernel: " + choices_help(enum_names(kAttentionKernelNames)) +
             " (auto: FA3 on SM90, FA2 elsewhere; default: the workload file's, else auto)"},
        {"trainer", text(&PlanFlags::trainer), false,
         "The prime-rl trainer running the workload: rl | sft (its host work by "
         "--prime-rl-version's era; default: a trainer config's own, rl under --runs-on "
         "prime-rl, sft with --emit prime-rl-sft, else none: no trainer host terms)"},
        {"expert-load", text(&PlanFlags::expert_load), true,
         "MoE routing: balanced, or a FILE of tokens per expert (numbers, one per expert)"},
        {"optimization-dtype", text(&PlanFlags::optimization_dtype), true,
         "Training workload: masters, their gradients and optimizer state in float32 | "
         "bfloat16 (prime-rl's optimization_dtype)"},
        {"reduce-dtype", text(&PlanFlags::reduce_dtype), true,
         "Training workload: gradient reduce-scatter in float32 | bfloat16 (prime-rl's "
         "reduce_dtype)"},
        {"gpu-memory-gib", positive_double(&PlanFlags::gpu_memory_gib), false,
         "GPU memory limit per GPU (default: the topology's)"},
        {"host-ram-gib", positive_double(&PlanFlags::host_ram_gib), false,
         "Host RAM limit per node (default: the topology's)"},
        {"include-mtp", boolean(&PlanFlags::include_mtp), false,
         "Train the multi-token-prediction layers too"},
        {"lora-rank", positive_int(&PlanFlags::lora_rank), false,
         "LoRA: adapters of this rank on frozen bf16 base weights (with --optimizer adamw)"},
        {"lora-alpha", positive_double(&PlanFlags::lora_alpha), false,
         "LoRA scaling alpha (default " + sig_figs(kLoraDefaultAlpha, 6) + ", prime-rl's)"},
        {"lora-targets", text(&PlanFlags::lora_targets), false,
         "LoRA target modules a,b,c (default prime-rl's: " + comma_list(lora_default_targets()) +
             ")"},
        {"lora-adapters", positive_int(&PlanFlags::lora_adapters), false,
         "LoRA adapter slots kept resident (prime-rl's max_concurrent_runs; default " +
             std::to_string(LoraConfig{}.adapters) + ")"},
        {"lora-active-runs", active_runs(), false,
         "LoRA: runs whose optimizer exists, 0..--lora-adapters; only they hold AdamW moments and "
         "run an optimizer step (default: every slot; prime-rl's benchmark runs none)"},
        {"allocator", text(&PlanFlags::allocator), false,
         "PyTorch allocator: default | expandable (expandable_segments:True); overrides the "
         "topology's pytorch: block (default: the topology's; expandable with --trainer-config, "
         "as prime-rl's launcher sets it)"},
        {"runtime", text(&PlanFlags::runtime), false,
         "Memory of: muonplan (our executor, exact) | pytorch (FSDP2 + NCCL; the default with a "
         "workload)"},
        {"runs-on", text(&PlanFlags::runs_on), false,
         "The runtime the plan is for: prime-rl (only what prime-rl of --prime-rl-version runs, "
         "with its defaults) | muonplan (our executor: every candidate). Default: prime-rl with "
         "--trainer-config or --emit prime-rl, else muonplan. Not --runtime, which picks the "
         "memory model"},
        {"gpu-headroom", headroom(&PlanFlags::gpu_headroom), false,
         "Fraction of GPU memory the fit keeps free (default: " + headroom_defaults(true) + ")"},
        {"host-headroom", headroom(&PlanFlags::host_headroom), false,
         "Fraction of host RAM the fit keeps free (default: " + headroom_defaults(false) + ")"},
        {"trainer-config", path(&PlanFlags::trainer_config), false,
         "prime-rl trainer config (RL or SFT; docs/trainer-config.md)"},
        {"prime-rl-version", text(&PlanFlags::prime_rl_version), false,
         "The trainer config's prime-rl as a date YYYY-MM-DD: its defaults apply where the file is "
         "silent (default: the newest known)"},
    };
    t.insert(t.end(), rest.begin(), rest.end());
    return t;
  }();
  return table;
}

// The table entry of a flag named with dashes or underscores; InputError when unknown.
const Access& access(const std::string& name) {
  std::string dashed = name;
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  for (const Entry& e : setters()) {
    if (e.name == dashed) return e.access;
  }
  throw InputError({}, "--" + dashed, "unknown option");
}

}  // namespace

void set_plan_flag(PlanFlags& flags, const std::string& name, const std::string& value) {
  std::string dashed = name;
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  access(name).set(flags, value, "--" + dashed);
  flags.typed[dashed] = value;
}

std::string plan_flag_typed(const PlanFlags& flags, const std::string& name) {
  std::string dashed = name;
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  const auto t = flags.typed.find(dashed);
  return t != flags.typed.end() ? t->second : plan_flag_value(flags, dashed);
}

std::string plan_flag_value(const PlanFlags& flags, const std::string& name) {
  return access(name).get(flags);
}

PlanFlags plan_flags_from_map(const std::map<std::string, std::string>& options) {
  PlanFlags flags;
  for (const auto& [name, value] : options) set_plan_flag(flags, name, value);
  return flags;
}

// The default as --help shows it: PlanFlags{}'s value as set_plan_flag reads it back, numbers
// to 6 significant digits.
static std::string default_text(const Entry& e) {
  if (!e.shows_default) return "";
  const std::string v = e.access.get(PlanFlags{});
  return e.access.type == "FLOAT" ? sig_figs(std::stod(v), 6) : v;
}

const std::vector<PlanFlagInfo>& plan_flag_table() {
  static const std::vector<PlanFlagInfo> table = [] {
    std::vector<PlanFlagInfo> out;
    for (const Entry& e : setters())
      out.push_back({e.name, e.access.type, default_text(e), e.help, e.search_only});
    return out;
  }();
  return table;
}

std::vector<std::string> plan_flag_names() {
  std::vector<std::string> names;
  for (const Entry& e : setters()) names.push_back(e.name);
  return names;
}

namespace {

// --lora-*: the rank turns LoRA on; the other three refine it and need it.
LoraConfig lora_options(const PlanFlags& f) {
  LoraConfig l;
  if (f.lora_rank < 0) throw InputError({}, "--lora-rank", positive_integer_message(f.lora_rank));
  if (f.lora_alpha < 0) throw InputError({}, "--lora-alpha", "must be positive");
  if (f.lora_adapters < 1) throw InputError({}, "--lora-adapters", "must be at least 1");
  if (f.lora_adapters > kMaxLoraAdapters)
    throw InputError({}, "--lora-adapters", lora_adapters_message(f.lora_adapters));
  if (f.lora_rank == 0) {
    const char* given = f.lora_alpha != 0         ? "--lora-alpha"
                        : !f.lora_targets.empty() ? "--lora-targets"
                        : f.lora_adapters != 1    ? "--lora-adapters"
                        : f.lora_active_runs >= 0 ? "--lora-active-runs"
                                                  : nullptr;
    if (given) throw InputError({}, given, "needs --lora-rank (LoRA is off without it)");
    return l;
  }
  l.rank = f.lora_rank;
  l.alpha = f.lora_alpha;
  l.adapters = f.lora_adapters;
  if (f.lora_active_runs > f.lora_adapters)
    throw InputError({}, "--lora-active-runs",
                     "at most --lora-adapters (" + std::to_string(f.lora_adapters) + "), got " +
                         std::to_string(f.lora_active_runs));
  l.active_runs = f.lora_active_runs;
  if (!f.lora_targets.empty())
    l.target_modules = parse_lora_targets(f.lora_targets, "--lora-targets");
  return l;
}

}  // namespace

PlanRequest to_plan_request(const PlanFlags& flags) {
  if (!flags.trainer_config.empty()) {  // it needs the model: prepare_plan applies it
    throw InputError({}, "--trainer-config",
                     "is applied by prepare_plan (prime_rl.h), which resolves the model first");
  }
  const PlanFlags& f = flags;
  PlanRequest r;
  PlanOptions& o = r.options;
  r.auto_nodes = f.nodes == "auto";
  if (!r.auto_nodes) o.nodes = parse_node_count(f.nodes);
  r.auto_offload = f.offload == "auto";
  if (!r.auto_offload) o.offload = parse_offload(f.offload);
  // 0 is "not given" (the topology's); set_plan_flag refuses a 0 given, this a negative one.
  for (auto [name, v] : {std::pair{"--max-nodes", f.max_nodes},
                         {"--max-predictions", f.max_predictions},
                         {"--gpus-per-node", f.gpus_per_node}}) {
    if (v < 0) throw InputError({}, name, positive_integer_message(v));
  }
  for (auto [name, v] :
       {std::pair{"--gpu-memory-gib", f.gpu_memory_gib}, {"--host-ram-gib", f.host_ram_gib}}) {
    if (v != 0) check_positive_finite(v, name);
    if (const std::string why = memory_gib_problem(v); !why.empty())
      throw InputError({}, name, why);
  }
  r.max_nodes = f.max_nodes;
  r.max_predictions = f.max_predictions;
  o.gpus_per_node = f.gpus_per_node;
  // Layout search: `--layout auto`, or no layout or a partial one with --nodes auto; the
  // dimensions the layout names stay fixed (docs/planner.md section 9).
  if (!f.layout.empty() && f.layout != "auto") o.layout = parse_layout(f.layout);
  if (f.layout == "auto" || r.auto_nodes) {
    r.search_ep = f.layout.find("ep=") == std::string::npos;
    r.search_cp = f.layout.find("cp=") == std::string::npos;
  } else {
    r.layout_fixed_by = f.layout.empty() ? "--nodes " + f.nodes + " with no --layout"
                                         : "the layout given";  // the message adds which
  }
  o.optimizer = parse_optimizer(f.optimizer);
  o.optimizer_staging = parse_offload_staging(f.staging);
  o.pinned_host_state = f.pinned_state;
  o.bf16_momentum = f.bf16_momentum;
  o.hyper = f.hyper;
  o.nesterov = f.nesterov;
  o.schedule = ns_schedule(f.schedule);
  // What plan_to_json will write, checked as the plan loader checks it (plan_checks.h): the
  // executor never refuses a plan for a value these flags let through.
  check_optimizer_config(resolved_hyper(o.hyper, o.schedule), o.schedule);
  o.owners = parse_owner_strategy(f.owners);
  o.gpu_memory_gib = f.gpu_memory_gib;  // 0: the topology's
  o.host_ram_gib = f.host_ram_gib;
  o.include_mtp = f.include_mtp;
  o.lora = lora_options(f);
  check_lora(o.lora, o.optimizer, "--optimizer");
  if (!r.auto_offload && lora_offload_refused(o.lora, o.offload))
    throw InputError({}, "--offload", kLoraSlotsOffloadRefused);
  o.workload = detail::workload_from_flags(f);
  if (!r.auto_offload) check_nesterov(o, "--nesterov");  // auto: the search skips full
  // A training workload is run by a PyTorch trainer; the optimizer step alone by our executor.
  o.runtime = f.runtime.empty() ? (o.workload ? RuntimeKind::pytorch : RuntimeKind::muonplan)
                                : parse_runtime(f.runtime);
  o.gpu_headroom = f.gpu_headroom;
  o.host_headroom = f.host_headroom;
  if (!f.prime_rl_version.empty()) {
    if (!detail::is_calendar_date(f.prime_rl_version))
      throw InputError({}, "--prime-rl-version",
                       detail::kCalendarDateExpected + brief(f.prime_rl_version) + "'");
    r.prime_rl_version = f.prime_rl_version;
  }
  if (f.allocator == "expandable" || f.allocator == "default") {
    o.expandable_segments = f.allocator == "expandable";
  } else if (!f.allocator.empty()) {
    throw InputError({}, "--allocator",
                     "expected default or expandable, got '" + brief(f.allocator) + "'");
  }
  return r;
}

}  // namespace muonplan
