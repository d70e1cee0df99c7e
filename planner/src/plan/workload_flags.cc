// The training workload the plan flags describe: --workload FILE, or --tokens-per-step and its
// companions (AC, LM head, CP style), with the trainer, attention kernel and dtypes.
#include "workload_flags.h"

#include <algorithm>

#include "muonplan/base/checked_int.h"
#include "muonplan/base/error.h"
#include "muonplan/planfile/plan_options.h"
#include "muonplan/planner/workload.h"
#include "trainer_flags.h"

namespace muonplan::detail {
namespace {

// A flag of the training step given without one: what to add.
constexpr const char* kNeedsWorkload =
    "applies to a training workload only (give --tokens-per-step and --seq-len, or --workload "
    "FILE)";

// "a, b" -> {"a", "b"}: --ac-targets' list.
std::vector<std::string> split_targets(const std::string& text) {
  std::vector<std::string> out;
  std::string rest = text;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string t = rest.substr(0, comma);
    t.erase(0, t.find_first_not_of(' '));
    t.erase(t.find_last_not_of(' ') + 1);
    if (t.empty()) throw InputError({}, "--ac-targets", "an empty target in '" + text + "'");
    out.push_back(t);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
  }
  return out;
}

// --ac, --ac-targets and --ac-freq onto a workload. Over a --workload file only the flags given
// apply, each overriding the file's key: a mode given drops the file's targets and freq where
// that mode has none.
void apply_ac_flags(const PlanFlags& f, Workload& w, bool from_file) {
  const auto given = [&](const char* name) { return !from_file || f.typed.count(name) > 0; };
  if (!given("ac") && !given("ac-targets") && !given("ac-freq")) return;
  const std::string mode = given("ac")      ? f.ac
                           : w.ac_selective ? "selective"
                           : w.ac_full      ? "full"
                                            : "none";
  std::vector<std::string> targets = w.ac_targets;
  if (given("ac-targets")) {
    targets = split_targets(f.ac_targets);
  } else if (given("ac") && mode != "selective") {
    targets.clear();
  }
  int64_t freq = given("ac-freq") ? f.ac_freq : w.ac_freq;
  if (given("ac") && mode == "none" && !given("ac-freq")) freq = 1;
  set_workload_ac(
      w, mode, targets, freq, {"--ac", "--ac-targets", "--ac-freq"},
      [](const char* field, const std::string& message) { throw InputError({}, field, message); });
}

}  // namespace

void set_workload_ac(Workload& w, const std::string& mode, const std::vector<std::string>& targets,
                     int64_t freq, const AcFieldNames& names,
                     const std::function<void(const char*, const std::string&)>& fail) {
  if (mode != "full" && mode != "none" && mode != "selective")
    fail(names.mode, "expected full, selective or none, got '" + brief(mode) + "'");
  if (freq < 1) fail(names.freq, "must be at least 1 (every layer)");
  if (mode != "selective" && !targets.empty())
    fail(names.targets, std::string("applies to ") + names.mode + " selective only");
  if (mode == "none" && freq != 1)
    fail(names.freq, std::string("applies to ") + names.mode + " full or selective only");
  w.ac_full = mode == "full";
  w.ac_selective = mode == "selective";
  w.ac_targets.clear();
  for (const std::string& t : targets) {
    if (std::find(w.ac_targets.begin(), w.ac_targets.end(), t) == w.ac_targets.end())
      w.ac_targets.push_back(t);
  }
  w.ac_freq = freq;
}

// The training workload the flags describe (--workload FILE, or --tokens-per-step and its
// companions), with the trainer, attention kernel and dtypes; nullopt: the optimizer step only.
std::optional<Workload> workload_from_flags(const PlanFlags& f) {
  std::optional<Workload> w;
  if (!f.workload.empty()) {
    w = load_workload(f.workload);
  } else if (has_workload(f)) {
    if (f.tokens_per_step <= 0 || f.seq_len <= 0) {
      throw InputError({}, "--tokens-per-step",
                       "a workload needs both --tokens-per-step and --seq-len");
    }
    // prime-rl turns AC on under activation offloading (it offloads the checkpoints): no AC
    // with offloaded activations is no run either trainer has.
    if (f.ac == "none" && f.ac_offload)
      throw InputError({}, "--ac",
                       "none contradicts --ac-offload (offloading keeps AC's checkpoints in host "
                       "RAM, and prime-rl turns AC on for it); give one of them");
    if (f.micro_batch_seqs <= 0) throw InputError({}, "--micro-batch-seqs", "must be positive");
    // Whole rows: 1000 tokens of 4096-token rows planned 0 rows, the activations missing.
    if (f.tokens_per_step % f.seq_len != 0) {
      const int64_t rows = f.tokens_per_step / f.seq_len;
      const std::string below = rows > 0 ? std::to_string(rows * f.seq_len) + " or " : "";
      throw InputError({}, "--tokens-per-step",
                       std::to_string(f.tokens_per_step) + " is not a whole number of rows of " +
                           "--seq-len " + std::to_string(f.seq_len) +
                           " tokens; the nearest: " + below +
                           std::to_string(checked_add(rows * f.seq_len, f.seq_len,
                                                      "--tokens-per-step", "a row more")));
    }
    if (f.lm_head_chunk < 0)
      throw InputError({}, "--lm-head-chunk", "must not be negative (0: unfused)");
    w = Workload{f.tokens_per_step, f.seq_len,       f.micro_batch_seqs,         f.ac == "full",
                 f.ac_offload,      f.lm_head_chunk, parse_cp_style(f.cp_style), f.ac_max_inflight};
  }
  if (w) apply_ac_flags(f, *w, !f.workload.empty());
  if (w && !f.workload.empty() && w->ac_offload && !w->ac_full && !w->ac_selective)
    throw InputError({}, "--ac",
                     "none contradicts the workload file's ac_offload: true (offloading keeps "
                     "AC's checkpoints in host RAM)");
  if (!f.trainer.empty() || f.expert_load != "balanced") {
    if (!w) throw InputError({}, f.trainer.empty() ? "--expert-load" : "--trainer", kNeedsWorkload);
    detail::apply_trainer_flags(f, *w);
  }
  if (!f.attention.empty()) {
    const AttentionKernel k = parse_attention_kernel(f.attention);
    if (!w) throw InputError({}, "--attention", kNeedsWorkload);
    w->attention = k;
  }
  const int64_t master = parse_dtype_bytes("--optimization-dtype", f.optimization_dtype);
  const int64_t reduce = parse_dtype_bytes("--reduce-dtype", f.reduce_dtype);
  if ((master != 4 || reduce != 4) && !w)
    throw InputError({}, master != 4 ? "--optimization-dtype" : "--reduce-dtype",
                     std::string(kNeedsWorkload) + "; the optimizer step alone keeps fp32");
  if (w) {
    w->master_bytes = master;
    w->reduce_bytes = reduce;
    w->weight_broadcast = f.weight_broadcast;
    w->inference_on_trainer_node = f.inference_on_trainer_node;
  }
  return w;
}

}  // namespace muonplan::detail
