// Plan flags to a PlanRequest: the one place the options of `muonplan plan` (and of the Python
// bindings) are checked.
#include "muonplan/plan_request.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <limits>
#include <type_traits>

#include "muonplan/error.h"
#include "muonplan/trainer_config.h"

namespace muonplan {
namespace {

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

template <typename T>
T parse_number(const std::string& text, const std::string& flag, const char* what) {
  size_t used = 0;
  T v{};
  try {
    if constexpr (std::is_floating_point_v<T>) {
      v = static_cast<T>(std::stod(text, &used));
    } else {
      const long long x = std::stoll(text, &used);
      if (x < std::numeric_limits<T>::min() || x > std::numeric_limits<T>::max()) used = 0;
      v = static_cast<T>(x);
    }
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size()) {
    throw InputError({}, flag, std::string("expected ") + what + ", got '" + text + "'");
  }
  return v;
}

bool parse_bool(const std::string& text, const std::string& flag) {
  if (text == "true" || text == "1") return true;
  if (text == "false" || text == "0") return false;
  throw InputError({}, flag, "expected true or false, got '" + text + "'");
}

using Setter = std::function<void(PlanFlags&, const std::string& value, const std::string& flag)>;
using Getter = std::function<std::string(const PlanFlags&)>;
struct Access {
  Setter set;
  Getter get;  // for plan_flag_value: the value as set_plan_flag takes it back
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
          [field](const PlanFlags& f) { return f.*field; }};
}
Access boolean(bool PlanFlags::*field) {
  return {[field](PlanFlags& f, const std::string& v, const std::string& flag) {
            f.*field = parse_bool(v, flag);
          },
          [field](const PlanFlags& f) { return std::string(f.*field ? "true" : "false"); }};
}
template <typename T>
Access number(T PlanFlags::*field, const char* what) {
  return {[field, what](PlanFlags& f, const std::string& v, const std::string& flag) {
            f.*field = parse_number<T>(v, flag, what);
          },
          [field](const PlanFlags& f) { return number_text(f.*field); }};
}
Access hyper(double OptimizerHyper::*field) {
  return {[field](PlanFlags& f, const std::string& v, const std::string& flag) {
            f.hyper.*field = parse_number<double>(v, flag, "a number");
          },
          [field](const PlanFlags& f) { return number_text(f.hyper.*field); }};
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
              throw InputError({}, flag, "expected b1,b2, got '" + v + "'");
            f.hyper.adamw_beta1 = parse_number<double>(v.substr(0, comma), flag, "a number");
            f.hyper.adamw_beta2 = parse_number<double>(v.substr(comma + 1), flag, "a number");
          },
          [](const PlanFlags& f) {
            return number_text(f.hyper.adamw_beta1) + "," + number_text(f.hyper.adamw_beta2);
          }};
}

// In the order `muonplan plan --help` lists them.
const std::vector<std::pair<std::string, Access>>& setters() {
  static const std::vector<std::pair<std::string, Access>> table = {
      {"nodes", text(&PlanFlags::nodes)},
      {"max-nodes", number(&PlanFlags::max_nodes, "an integer")},
      {"gpus-per-node", number(&PlanFlags::gpus_per_node, "an integer")},
      {"layout", layout()},
      {"optimizer", text(&PlanFlags::optimizer)},
      {"offload", text(&PlanFlags::offload)},
      {"offload-staging", text(&PlanFlags::staging)},
      {"pinned-state", boolean(&PlanFlags::pinned_state)},
      {"bf16-momentum", boolean(&PlanFlags::bf16_momentum)},
      {"nesterov", boolean(&PlanFlags::nesterov)},
      {"lr", hyper(&OptimizerHyper::lr)},
      {"momentum", hyper(&OptimizerHyper::momentum)},
      {"weight-decay", hyper(&OptimizerHyper::weight_decay)},
      {"update-rms", hyper(&OptimizerHyper::update_rms)},
      {"adamw-lr", hyper(&OptimizerHyper::adamw_lr)},
      {"adamw-weight-decay", hyper(&OptimizerHyper::adamw_weight_decay)},
      {"adamw-betas", adamw_betas()},
      {"ns-schedule", text(&PlanFlags::schedule)},
      {"owners", text(&PlanFlags::owners)},
      {"workload", text(&PlanFlags::workload)},
      {"tokens-per-step", number(&PlanFlags::tokens_per_step, "an integer")},
      {"seq-len", number(&PlanFlags::seq_len, "an integer")},
      {"micro-batch-seqs", number(&PlanFlags::micro_batch_seqs, "an integer")},
      {"ac", text(&PlanFlags::ac)},
      {"ac-offload", boolean(&PlanFlags::ac_offload)},
      {"lm-head-chunk", number(&PlanFlags::lm_head_chunk, "an integer")},
      {"cp-style", text(&PlanFlags::cp_style)},
      {"gpu-memory-gib", number(&PlanFlags::gpu_memory_gib, "a number")},
      {"host-ram-gib", number(&PlanFlags::host_ram_gib, "a number")},
      {"include-mtp", boolean(&PlanFlags::include_mtp)},
      {"trainer-config", text(&PlanFlags::trainer_config)},
  };
  return table;
}

// The table entry of a flag named with dashes or underscores; InputError when unknown.
const Access& access(const std::string& name) {
  std::string dashed = name;
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  for (const auto& [known, a] : setters()) {
    if (known == dashed) return a;
  }
  throw InputError({}, "--" + dashed, "unknown option");
}

}  // namespace

void set_plan_flag(PlanFlags& flags, const std::string& name, const std::string& value) {
  std::string dashed = name;
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  access(name).set(flags, value, "--" + dashed);
}

std::string plan_flag_value(const PlanFlags& flags, const std::string& name) {
  return access(name).get(flags);
}

PlanFlags plan_flags_from_map(const std::map<std::string, std::string>& options) {
  PlanFlags flags;
  for (const auto& [name, value] : options) set_plan_flag(flags, name, value);
  return flags;
}

std::vector<std::string> plan_flag_names() {
  std::vector<std::string> names;
  for (const auto& entry : setters()) names.push_back(entry.first);
  return names;
}

PlanRequest to_plan_request(const PlanFlags& flags) {
  if (!flags.trainer_config.empty()) {  // the file fills the flags not given
    PlanFlags from_file = flags;
    from_file.trainer_config.clear();
    apply_trainer_config(flags.trainer_config, from_file);
    return to_plan_request(from_file);
  }
  const PlanFlags& f = flags;
  PlanRequest r;
  PlanOptions& o = r.options;
  r.auto_nodes = f.nodes == "auto";
  if (!r.auto_nodes) o.nodes = parse_positive_int(f.nodes, "--nodes");
  r.auto_offload = f.offload == "auto";
  if (!r.auto_offload) o.offload = parse_offload(f.offload);
  r.max_nodes = f.max_nodes;
  o.gpus_per_node = f.gpus_per_node;
  // Layout search: `--layout auto`, or no layout or a partial one with --nodes auto; the
  // dimensions the layout names stay fixed (docs/planner.md section 9).
  if (!f.layout.empty() && f.layout != "auto") o.layout = parse_layout(f.layout);
  if (f.layout == "auto" || r.auto_nodes) {
    r.search_ep = f.layout.find("ep=") == std::string::npos;
    r.search_cp = f.layout.find("cp=") == std::string::npos;
  }
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
  if (f.hyper.adamw_lr < 0) throw InputError({}, "--adamw-lr", "must not be negative (0: --lr)");
  if (f.hyper.adamw_weight_decay < 0)
    throw InputError({}, "--adamw-weight-decay", "must not be negative");
  for (double b : {f.hyper.adamw_beta1, f.hyper.adamw_beta2}) {
    if (!(b >= 0 && b <= 1)) throw InputError({}, "--adamw-betas", "each must be in [0, 1]");
  }
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
    if (f.micro_batch_seqs <= 0) throw InputError({}, "--micro-batch-seqs", "must be positive");
    if (f.lm_head_chunk < 0)
      throw InputError({}, "--lm-head-chunk", "must not be negative (0: unfused)");
    o.workload =
        Workload{f.tokens_per_step, f.seq_len,       f.micro_batch_seqs,        f.ac == "full",
                 f.ac_offload,      f.lm_head_chunk, parse_cp_style(f.cp_style)};
  }
  if (o.nesterov && !r.auto_offload && o.offload == OffloadMode::full) {
    throw InputError({}, "--nesterov", "Nesterov momentum is not supported under full offload");
  }
  return r;
}

}  // namespace muonplan
