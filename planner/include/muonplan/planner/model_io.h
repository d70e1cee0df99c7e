// Loading model specs: our YAML format (docs/model-spec.md) or a Hugging Face config.json.
// Every loader validates and throws InputError ("FILE:LINE:COL: field: what is wrong").
#pragma once

#include <string>

#include "muonplan/planner/model_spec.h"

namespace muonplan {

ModelSpec load_model_yaml(const std::string& path);
ModelSpec parse_model_yaml(const std::string& text, const std::string& path_for_errors);

// Imports config.json for model types llama, qwen3, qwen3_moe, glm4_moe, deepseek_v3, kimi_k2,
// deepseek_v32 and glm_moe_dsa, with muonplan's default storage (separate q/k/v and gate/up,
// stacked experts).
ModelSpec import_hf_config(const std::string& path);
ModelSpec parse_hf_config(const std::string& text, const std::string& path_for_errors);

// Picks the loader by content: a JSON object with "model_type" is a Hugging Face config,
// anything else is our YAML.
ModelSpec load_model(const std::string& path);

}  // namespace muonplan
