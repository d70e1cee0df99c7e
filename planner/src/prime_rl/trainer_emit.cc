// --emit's text (emit_config, prime_rl.h): the plan as a prime-rl config, over the user's file or
// alone.
#include "muonplan/planner/prime_rl.h"

#include <sstream>

#include "muonplan/base/error.h"
#include "muonplan/base/io.h"
#include "muonplan/planner/plan.h"
#include "prime_rl/toml_tree.h"
#include "prime_rl/trainer_config.h"
#include "prime_rl/trainer_config_in.h"
#include "prime_rl/trainer_keys.h"

namespace muonplan {

void check_emit_form(std::string& form, PlanFlags& flags) {
  if (form == "toml") form = "prime-rl";
  if (!form.empty() && form != "prime-rl" && form != "prime-rl-sft" && form != "prime-rl-diff") {
    throw InputError({}, "--emit",
                     "expected prime-rl, prime-rl-diff or prime-rl-sft, got '" + brief(form) + "'");
  }
  // A plan written as a prime-rl config is for prime-rl unless --runs-on says otherwise.
  if (!form.empty() && flags.runs_on.empty()) flags.runs_on = "prime-rl";
  // prime-rl's SFT trainer has no fused LM head (read_lm_head): not RL's default 8192.
  if (form == "prime-rl-sft" && flags.typed.count("lm-head-chunk") == 0)
    set_plan_flag(flags, "lm-head-chunk", "0");
  // ... and it is the SFT trainer whose host work the step has.
  if (form == "prime-rl-sft") default_prime_rl_trainer(flags, true);
}

namespace {

// --emit prime-rl writes the SFT form when the input was SFT; --emit toml is the old name.
EmitInput emit_input(const EmitRequest& f, const PlanInputs& in) {
  EmitInput e;
  e.sft = f.form == "prime-rl-sft" || (f.form != "prime-rl-rl" && in.trainer && in.trainer->sft);
  e.model_id = !f.model.empty() ? (in.model.spec.hf_id.empty() ? f.model : in.model.spec.hf_id)
               : in.trainer     ? in.trainer->model_name
                                : in.model.spec.name;
  if (in.trainer && !in.trainer->batch_key.empty()) e.batch_key = in.trainer->batch_key;
  e.ac_max_inflight = in.flags.ac_max_inflight;
  e.single_node = in.trainer && in.trainer->single_node;
  e.standalone = f.form != "prime-rl-sft" && in.trainer && in.trainer->standalone;
  e.prime_rl_version = f.flags.prime_rl_version;
  e.only_given = !in.trainer;
  for (const auto& [flag, value] : f.flags.typed) e.given.insert(flag);
  e.fsdp_group_key = in.trainer && in.trainer->fsdp_group_key;
  e.vlm = in.trainer && in.trainer->vlm;
  e.allocator = in.flags.allocator;
  return e;
}

// Keys written although the file's own plan has the same value: an `ep = "auto"` (or absent)
// resolves against the world, so on another world it must be written as planned.
// A multi_node plan over a file without a [slurm] table gets one when the world changes
// (prime-rl runs multi_node only under SLURM); a file emitted unchanged stays as it is.
std::vector<std::string> forced_keys(const PlanInputs& in, const nlohmann::json& plan) {
  const TrainerConfig& tc = *in.trainer;
  const int world = plan.at("world_size");
  std::vector<std::string> out;
  if (world == tc.nodes * tc.gpus_per_node && plan.at("nodes").get<int>() == tc.nodes) return out;
  if (tc.ep == 0 && tc.resolved_ep(in.model.spec, world) != plan.at("layout").at("ep").get<int>())
    out.push_back(prime_rl_table("model", tc.top_level()) + ".ep");
  if (tc.world_table == "deployment" && !parse_toml(read_input_file(tc.path), tc.path).get("slurm"))
    out.push_back("slurm.job_name");
  return out;
}

// A file of an era before [deployment] that names no launcher world (trainer_gpu_ids,
// rl_slurm's keys) has no key for another world: the plan's is not written into a table that
// prime-rl of its date lacks (prime_rl_versions.cc, key eras).
void refuse_world_before_deployment(const PlanInputs& in, const nlohmann::json& plan,
                                    const std::string& date) {
  const TrainerConfig& tc = *in.trainer;
  const int world = plan.at("world_size");
  const FileValue* nodes = tc.value("nodes");  // the local launcher's trainer_gpu_ids
  if (nodes && nodes->shown.rfind("trainer_gpu_ids", 0) == 0) return;
  if (tc.world_table != "deployment" || tc.standalone ||
      !prime_rl_key_on("deployment", "type", tc.sft, date).empty() ||
      (world == tc.nodes * tc.gpus_per_node && plan.at("nodes").get<int>() == tc.nodes))
    return;
  throw InputError({}, "--emit",
                   "prime-rl of " + date +
                       " has no [deployment] table (from 2026-02-24, #1859), "
                       "and " +
                       tc.path + " names no world of its launcher, so the plan's " +
                       std::to_string(plan.at("nodes").get<int>()) + " node(s) of " +
                       std::to_string(plan.at("gpus_per_node").get<int>()) +
                       " GPUs have no key there; no config written: plan the file's world, or give "
                       "--prime-rl-version 2026-02-24 or later");
}

// --emit over a trainer config: its own file with the keys the plan changes (prime-rl), or
// only those keys (prime-rl-diff). A key changes where the fragment of the plan differs from
// the fragment of the file's own plan (its flags alone); without a file, the fragment.
}  // namespace

std::string emit_config(const EmitRequest& f, const PlanInputs& in, const Topology& topo,
                        const nlohmann::json& plan) {
  const std::string chosen = prime_rl_config(plan, emit_input(f, in));
  if (!in.trainer || f.form == "prime-rl-sft") return chosen;
  refuse_world_before_deployment(in, plan, f.flags.prime_rl_version);
  PlanFlags own;
  own.trainer_config = f.flags.trainer_config;
  own.prime_rl_version = f.flags.prime_rl_version;
  const PlanInputs file = prepare_plan(f.model, own);
  EmitInput as_written = emit_input(f, file);
  as_written.model_id = file.trainer->model_name;  // a --model given changes [model] name
  const std::string written =
      prime_rl_config(plan_to_json(make_plan(file.model.spec, topo, file.request)), as_written);
  const std::vector<std::string> force = forced_keys(in, plan);
  if (f.form == "prime-rl-diff") return diff_fragment(chosen, written, force);
  const size_t n = changed_lines(chosen, written, force).size();
  std::string head;
  std::istringstream lines(chosen);
  for (std::string l; std::getline(lines, l) && is_header_comment(l);) head += l + "\n";
  head += "# muonplan plan --emit prime-rl over " + in.trainer->path + ": " + std::to_string(n) +
          " key(s) changed; --emit prime-rl-diff prints only them\n";
  std::string body =
      patched_file(read_input_file(in.trainer->path), in.trainer->path, chosen, written, force);
  // A UTF-8 BOM stays at byte 0: the header comments go after it.
  const std::string bom = "\xef\xbb\xbf";
  if (body.compare(0, bom.size(), bom) == 0) return bom + head + body.substr(bom.size());
  return head + body;
}

}  // namespace muonplan
