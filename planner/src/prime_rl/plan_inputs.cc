// prepare_plan and the other front-door steps on a trainer config's inputs (prime_rl.h).
#include "muonplan/planner/prime_rl.h"

#include <memory>
#include <optional>
#include <utility>

#include "prime_rl/prime_rl_rules.h"
#include "prime_rl/trainer_config_in.h"

namespace muonplan {

PlanInputs prepare_plan(const std::string& model, PlanFlags flags) {
  PlanInputs in;
  if (!flags.trainer_config.empty())
    in.trainer = std::make_shared<const TrainerConfig>(
        read_trainer_config(flags.trainer_config, flags.prime_rl_version));
  if (model.empty() && !in.trainer) {
    throw InputError({}, "--model",
                     "is required (a path, a bundled name, an HF id), or --trainer-config "
                     "naming [model] name");
  }
  in.model_name = model.empty() ? in.trainer->model_name : model;
  if (!model.empty()) {
    in.model = resolve_model(model, {}, "--model");
    if (in.trainer && in.trainer->model_at.line > 0 && in.trainer->model_name != model) {
      in.overrides.push_back("--model " + model + " overrides " + in.trainer->path + ":" +
                             std::to_string(in.trainer->model_at.line) + " (name = \"" +
                             in.trainer->model_name + "\")");
    }
  } else {
    const TrainerConfig& tc = *in.trainer;
    // RL files name it in [model] (shared) or [trainer.model]; the error points at the line.
    try {
      in.model = resolve_model(tc.model_name, tc.model_at, "model.name");
    } catch (const InputError& e) {  // the fix, where the file names a model not found here
      throw InputError(e.loc(), e.field(),
                       e.message() +
                           "; --model PATH (a spec, config.json or a bundled name) "
                           "overrides the file's name");
    }
  }
  if (in.trainer) apply_trainer_config(*in.trainer, in.model.spec, flags, in.overrides);
  // --runs-on prime-rl on the flag path: prime-rl's defaults where no flag was given, kept in
  // in.flags (the emit re-plans from them); runs_on_request below finds them set.
  const bool prime = runs_on(flags, in.trainer != nullptr) == "prime-rl";
  if (prime && !in.trainer) {
    for (const std::string& d : apply_prime_rl_flag_defaults(flags))
      in.overrides.push_back("--runs-on prime-rl: " + d + ", prime-rl's default");
  }
  in.flags = flags;
  if (!in.trainer && !prime && !flags.prime_rl_version.empty()) {
    in.overrides.push_back("--prime-rl-version " + flags.prime_rl_version +
                           ": changes no figure without --trainer-config or --runs-on prime-rl "
                           "(its defaults apply where a trainer config is silent); kept in the "
                           "plan request");
  }
  try {
    in.request = runs_on_request(flags, in.trainer != nullptr, in.trainer.get(), nullptr);
  } catch (const InputError& e) {
    if (in.trainer) rethrow_at_file(*in.trainer, e, in.overrides);
    throw;
  }
  return in;
}

PlanInputs prepare_plan(ModelSpec spec, PlanFlags flags) {
  PlanInputs in;
  in.model.spec = std::move(spec);
  const bool file = !flags.trainer_config.empty();
  std::optional<TrainerConfig> tc;
  if (file) {
    tc = read_trainer_config(flags.trainer_config, flags.prime_rl_version);
    std::vector<std::string> overrides;
    apply_trainer_config(*tc, in.model.spec, flags, overrides);
  }
  in.flags = flags;
  in.request = runs_on_request(flags, file, tc ? &*tc : nullptr, nullptr);
  return in;
}

const std::vector<std::string>& trainer_warnings(const PlanInputs& in) {
  static const std::vector<std::string> kNone;
  return in.trainer ? in.trainer->warnings : kNone;
}

void rethrow_at_file(const PlanInputs& in, const InputError& e) {
  if (in.trainer) rethrow_at_file(*in.trainer, e, in.overrides);
  throw e;
}

PlanRequest report_request(const PlanInputs& in, const PlanFlags& given, std::string& note) {
  if (!in.trainer || !given.layout.empty() || in.trainer->dp_replicate > 1) return in.request;
  PlanFlags flags = in.flags;
  const size_t comma = flags.layout.find(',');
  if (flags.layout.rfind("fsdp=", 0) != 0 || comma == std::string::npos) return in.request;
  flags.layout = flags.layout.substr(comma + 1);  // "cp=C,ep=E"
  note = in.trainer->path + "'s layout (" + in.flags.layout + ") swept as " + flags.layout +
         ", FSDP over each node count's GPUs";
  return runs_on_request(flags, true, in.trainer.get(), nullptr);
}

}  // namespace muonplan
