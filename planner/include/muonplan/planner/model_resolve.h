// A model named as a user names it (docs/trainer-config.md, "Model resolution"): a path to a
// YAML spec or config.json, a directory holding config.json, a bundled spec's short name
// (glm-4.5-air), or a Hugging Face id (zai-org/GLM-4.5-Air) found in the local hub cache or
// declared by a bundled spec's hf_id. Nothing is downloaded.
#pragma once

#include <string>
#include <vector>

#include "muonplan/base/error.h"
#include "muonplan/planner/model_spec.h"

namespace muonplan {

struct ResolvedModel {
  ModelSpec spec;
  std::string path;  // the file read
  std::string how;   // "path", "directory", "hf cache", "bundled", "bundled hf_id"
};

struct BundledModel {
  std::string name, hf_id, path;
};
// models/*.yaml in the data directory, by name; empty when there is no data directory.
std::vector<BundledModel> bundled_models();

// The hub cache the Hugging Face libraries use: $HF_HUB_CACHE, else $HF_HOME/hub, else
// ~/.cache/huggingface/hub.
std::string hf_hub_cache();

// Resolves `name`; InputError at `at` naming `field` with the id and every place looked when
// none holds it.
ResolvedModel resolve_model(const std::string& name, const SourceLoc& at, const std::string& field);

}  // namespace muonplan
