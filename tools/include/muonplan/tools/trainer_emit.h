// --emit's text, for every front end (the CLI's plan, Python's plan(emit=...)): the chosen
// plan as a prime-rl config (trainer_config.h's fragment), laid over the user's file when the
// plan read one (docs/trainer-config.md, "The writer").
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "muonplan/planner/plan_inputs.h"
#include "muonplan/planner/plan_request.h"
#include "muonplan/planner/topology.h"

namespace muonplan {

// The emit form: prime-rl (the input's kind), prime-rl-sft, prime-rl-diff; `toml` is the old
// name of prime-rl. Normalizes `form`, and sets what an emitted plan implies on `flags`: runs on
// prime-rl unless --runs-on says otherwise; SFT unfused LM head. InputError on another form.
void check_emit_form(std::string& form, PlanFlags& flags);

struct EmitRequest {
  std::string form;   // after check_emit_form
  std::string model;  // --model as given ("" when the trainer config names it)
  PlanFlags flags;    // the plan's flags (check_emit_form's)
};

// `plan` (plan_to_json of the plan made from `in`) as the config the form names.
std::string emit_config(const EmitRequest& request, const PlanInputs& in, const Topology& topo,
                        const nlohmann::json& plan);

}  // namespace muonplan
