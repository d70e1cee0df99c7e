// The prime-rl importer's front door (planner/src/prime_rl/, docs/trainer-config.md): everything
// the rest of the program asks of a prime-rl trainer config, and of prime-rl as the runtime a
// plan is for. Reading the file, its versions, keys, batch and LoRA, prime-rl's rules for the
// search, the answer and the writer (--emit) live in the room, behind this one header; the
// search and the plan request know no TOML and no prime-rl (they take RuntimeRules).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "muonplan/base/error.h"
#include "muonplan/planner/alternatives.h"
#include "muonplan/planner/model_resolve.h"
#include "muonplan/planner/plan.h"
#include "muonplan/planner/plan_request.h"
#include "muonplan/planner/topology.h"

namespace muonplan {

// A trainer config as read (the room's trainer_config_in.h): opaque outside the room.
struct TrainerConfig;

// What every front end (CLI plan and report, Python, calibrate --training-run) does before
// make_plan: resolve the model (--model or the file's [model] name, model_resolve.h), apply the
// trainer config to the flags, apply --runs-on's defaults and build the request.
struct PlanInputs {
  ResolvedModel model;
  std::string model_name;  // as resolved: --model's argument, else the file's [model] name
  std::shared_ptr<const TrainerConfig> trainer;  // null without --trainer-config
  PlanFlags flags;                               // the trainer config applied
  std::vector<std::string> overrides;            // "--nodes 3 overrides FILE:LINE (key = value)"
  PlanRequest request;
};

// InputError "--model: is required ..." when neither --model nor a trainer config names one.
PlanInputs prepare_plan(const std::string& model, PlanFlags flags);
// The same for a model given as a spec (Python's dict model): the trainer config, if any,
// sets the flags as above, and the inputs keep no file (no name to resolve, nothing to write
// over): the plan and the emit are those of the flags the file gave.
PlanInputs prepare_plan(ModelSpec spec, PlanFlags flags);

// The trainer config's warnings ("FILE:LINE:COL: key: ..."); none without one.
const std::vector<std::string>& trainer_warnings(const PlanInputs& in);
// Reports an InputError make_plan raised for a flag the file set at the file's line (a flag
// given instead keeps its error); rethrows `e` as it is without a trainer config.
[[noreturn]] void rethrow_at_file(const PlanInputs& in, const InputError& e);

// to_plan_request for the runtime --runs-on names (every front end: plan, report, Python):
// under prime-rl without a prime-rl input (a trainer config, --emit prime-rl), its flag defaults
// at the --prime-rl-version date first (each listed in *defaults_set when given), then its rules
// (what that prime-rl can run) and its ep = "auto". --runs-on is the runtime a plan is for, not
// --runtime's memory model (muonplan | pytorch).
PlanRequest runs_on_request(PlanFlags flags, bool prime_rl_input,
                            std::vector<std::string>* defaults_set = nullptr);

// prime-rl's trainer defaults on `date` (YYYY-MM-DD; "" the newest), where nothing sets the key:
// the one version table (prime_rl_versions.cc) that --prime-rl-version and the trainer-config
// reader take, for readers of runs made without a config (the trainer-benchmark form of
// --training-run). InputError "--prime-rl-version: ..." on a date that is not one.
struct PrimeRlEra {
  bool optim_cpu_offload = true, ac = true, ac_offloading = true;
  int64_t rl_lm_head_chunk = 8192;  // RL's fused head; 0: the vanilla head (whole logits)
};
PrimeRlEra prime_rl_era(const std::string& date);

// The report's base request from prepare_plan's inputs. With a trainer config, the file's
// layout names its own world (fsdp = its GPUs / dp_replicate): the sweep holds its cp and ep
// and lets FSDP span each count's world, unless `given` (the flags as the user typed them)
// has --layout or the file replicates (dp_replicate > 1), whose layout is held as written.
// `note` says which, when the layout was changed.
PlanRequest report_request(const PlanInputs& in, const PlanFlags& given, std::string& note);

// The answer to a trainer config: the config's plan `written` (its nodes, layout and offload)
// and its best alternatives under the rules of its prime-rl, keeping the config's optimizer and
// workload, each with the keys to change; a one-node file also tries more of its node's GPUs.
using TrainerAnswer = Alternatives;
TrainerAnswer trainer_answer(const ModelSpec& spec, const Topology& topo, const PlanInputs& in,
                             const Plan& written);
// The answer as text for `muonplan plan` and as --json's "trainer_config" object
// (docs/cli-contract.md).
std::string trainer_answer_text(const PlanInputs& in, const TrainerAnswer& a, const Plan& written,
                                bool explain);
nlohmann::json trainer_answer_json(const PlanInputs& in, const TrainerAnswer& a,
                                   const Plan& written);

// --emit (docs/trainer-config.md, "The writer"). The form: prime-rl (the input's kind),
// prime-rl-sft, prime-rl-diff; `toml` is the old name of prime-rl. Normalizes `form`, and sets
// what an emitted plan implies on `flags`: runs on prime-rl unless --runs-on says otherwise;
// SFT unfused LM head. InputError on another form.
void check_emit_form(std::string& form, PlanFlags& flags);

struct EmitRequest {
  std::string form;   // after check_emit_form
  std::string model;  // --model as given ("" when the trainer config names it)
  PlanFlags flags;    // the plan's flags (check_emit_form's)
};

// `plan` (plan_to_json of the plan made from `in`) as the config the form names: the chosen
// plan as a prime-rl config, laid over the user's file when the plan read one. InputError
// ("--emit: ...") when prime-rl (of --prime-rl-version) cannot run it as planned.
std::string emit_config(const EmitRequest& request, const PlanInputs& in, const Topology& topo,
                        const nlohmann::json& plan);

}  // namespace muonplan
