#include "muonplan/planner/prime_rl.h"

#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "muonplan/base/units.h"
#include "prime_rl/trainer_config_in.h"

namespace muonplan {
namespace {

std::string describe(const Candidate& c, int gpn) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%d node(s) x %d GPUs, %s, offload %s: %s, GPU peak %.1f GiB, host RAM %.0f GiB "
                "per node, step %.3f s (%.1f GPU-s)",
                c.nodes, gpn, c.layout.c_str(), to_string(c.offload), c.fits ? "fits" : "NO FIT",
                c.gpu_peak_gib, c.host_ram_per_node_gib, c.step_s, c.gpu_seconds);
  return buf;
}

nlohmann::json candidate_json(const Candidate& c) {
  return {{"nodes", c.nodes},
          {"layout", c.layout},
          {"offload", to_string(c.offload)},
          {"fits", c.fits},
          {"gpu_peak_gib", c.gpu_peak_gib},
          {"host_ram_per_node_gib", c.host_ram_per_node_gib},
          {"step_s", c.step_s},
          {"gpu_seconds", c.gpu_seconds}};
}

// An RL config's global batch on its own world and as planned: a flag (--nodes, whose workers
// need whole rows again; --tokens-per-step) may change it, and the trainer would then run
// another batch than the file's.
std::optional<std::pair<int64_t, int64_t>> batch_change(const TrainerConfig& tc,
                                                        const Plan& written) {
  const FileValue* file = tc.value("tokens-per-step");
  if (tc.sft || !file || !written.options.workload) return std::nullopt;
  const int64_t as_written = std::stoll(file->text);
  const int64_t planned = written.options.workload->tokens_per_step;
  if (planned == as_written) return std::nullopt;
  return std::pair{as_written, planned};
}

// "as written: deployment.num_train_nodes = 2; planned with --nodes 4" from an override line
// ("--nodes 4 overrides FILE:14 (deployment.num_train_nodes = 2)", apply_trainer_config's
// form); a line of another form is kept whole.
std::string override_label(const std::string& line) {
  const size_t at = line.find(" overrides ");
  const size_t open = line.rfind(" (");
  if (at == std::string::npos || open == std::string::npos || open < at || line.back() != ')')
    return line;
  return "as written: " + line.substr(open + 2, line.size() - open - 3) + "; planned with " +
         line.substr(0, at);
}

}  // namespace

std::string trainer_answer_text(const PlanInputs& in, const TrainerAnswer& a, const Plan& written,
                                bool explain) {
  const TrainerConfig& tc = *in.trainer;
  std::string out = "\nprime-rl " +
                    std::string(tc.sft          ? "SFT"
                                : tc.standalone ? "trainer"
                                                : "RL") +
                    " config " + tc.path + " (model " + in.model_name + ", read from " +
                    in.model.path + ")\n";
  // With flags that override the file, the first plan is the file as the flags changed it:
  // label it so, and say what the file wrote (issue 36 item 13).
  if (in.overrides.empty()) {
    out += "  as written: " + describe(a.as_written, written.gpus_per_node) + "\n";
  } else {
    out += "  as planned: " + describe(a.as_written, written.gpus_per_node) + "\n";
    for (const std::string& o : in.overrides) out += "    " + override_label(o) + "\n";
  }
  for (const std::string& n : tc.notes) out += "  note: " + n + "\n";
  if (const auto change = batch_change(tc, written)) {
    out += "  global batch changed by the flags: " + std::to_string(change->first) +
           " tokens per step as written, " + std::to_string(change->second) +
           " planned; the trainer runs the planned step only with [orchestrator] " + tc.batch_key +
           " set to match\n";
  }
  if (a.alternatives.empty()) {
    out +=
        "  no layout prime-rl accepts fits on up to " + std::to_string(a.max_nodes) + " node(s)\n";
  }
  if (!a.alternatives.empty()) {
    out += "alternatives (node counts up to --max-nodes " + std::to_string(a.max_nodes) + "):\n";
  }
  for (const Alternative& alt : a.alternatives) {
    out += "  " + alt.objective + ": " + describe(alt.candidate, alt.gpus_per_node) + "\n";
    if (alt.keys.empty()) out += "    keys to change: none (the config as written)\n";
    for (const std::string& k : alt.keys) out += "    " + k + "\n";
  }
  if (explain) {
    out += "tables ignored (they do not change the plan):";
    for (const std::string& t : tc.ignored) out += " " + t;
    out += tc.ignored.empty() ? " none\n" : "\n";
  }
  return out;
}

nlohmann::json trainer_answer_json(const PlanInputs& in, const TrainerAnswer& a,
                                   const Plan& written) {
  const TrainerConfig& tc = *in.trainer;
  nlohmann::json alts = nlohmann::json::array();
  for (const Alternative& alt : a.alternatives) {
    nlohmann::json j = candidate_json(alt.candidate);
    j["gpus_per_node"] = alt.gpus_per_node;
    j["objective"] = alt.objective;
    j["keys_to_change"] = alt.keys;
    alts.push_back(j);
  }
  const auto change = batch_change(tc, written);
  const nlohmann::json batch = change ? nlohmann::json{{"as_written_tokens", change->first},
                                                       {"planned_tokens", change->second}}
                                      : nlohmann::json(nullptr);
  return {{"path", tc.path},
          {"global_batch_changed", batch},
          {"kind", tc.kind()},
          {"model_name", in.model_name},
          {"model_file", in.model.path},
          {"model_found_by", in.model.how},
          {"as_written", candidate_json(a.as_written)},
          {"max_nodes", a.max_nodes},
          {"node_counts", a.node_counts},
          {"alternatives", alts},
          {"notes", tc.notes},
          {"warnings", tc.warnings},
          {"overrides", in.overrides},
          {"ignored_tables", tc.ignored}};
}

}  // namespace muonplan
