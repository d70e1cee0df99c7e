// What every front end (CLI, Python) does before make_plan: resolve the model (--model or the
// trainer config's [model] name, model_resolve.h), apply the trainer config to the flags
// (trainer_config_in.h), and build the request.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "muonplan/planner/model_resolve.h"
#include "muonplan/planner/plan.h"
#include "muonplan/planner/plan_request.h"
#include "muonplan/planner/trainer_config_in.h"

namespace muonplan {

struct PlanInputs {
  ResolvedModel model;
  std::string model_name;  // as resolved: --model's argument, else the file's [model] name
  std::optional<TrainerConfig> trainer;
  PlanFlags flags;                     // the trainer config applied
  std::vector<std::string> overrides;  // "--nodes 3 overrides FILE:LINE (key = value)"
  PlanRequest request;
};

// InputError "--model: is required ..." when neither --model nor a trainer config names one.
PlanInputs prepare_plan(const std::string& model, PlanFlags flags);

}  // namespace muonplan
