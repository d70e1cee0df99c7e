// --trainer-config in process: prime-rl files (tests/data/prime-rl) into flags and requests,
// what the key table guards, the emitted config read back, and the keys an alternative names.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "muonplan/base/error.h"
#include "muonplan/planner/model_io.h"
#include "muonplan/planner/prime_rl.h"
#include "prime_rl/prime_rl_answer.h"
#include "prime_rl/trainer_config.h"
#include "prime_rl/trainer_config_in.h"
#include "prime_rl/trainer_keys.h"
#include "test_paths.h"

using namespace muonplan;
using json = nlohmann::json;
using test::error_of;

namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("muonplan-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(path) << text;
  return path.string();
}

PlanInputs inputs(const std::string& fixture, const std::string& model = "") {
  PlanFlags f;
  f.trainer_config = repo_path("tests/data/prime-rl/" + fixture);
  return prepare_plan(model.empty() ? "" : repo_path(model), f);
}

}  // namespace

TEST_CASE("trainer config: AC offload's in-flight activations reach the workload",
          "[trainer_config]") {
  const PlanInputs glm = inputs("rl-glm-full.toml", "models/glm-4.5-air.yaml");
  REQUIRE(glm.request.options.workload);
  CHECK(glm.request.options.workload->ac_max_inflight == 3);
  CHECK(glm.request.options.workload->ac_offload);
  // A file that does not set it leaves it unset: the topology's ac_offload_inflight_layers
  // (prime-rl's default, 5) applies.
  const PlanInputs dflt = inputs("rl-defaults.toml", "models/qwen3-30b-a3b.yaml");
  CHECK(dflt.request.options.workload->ac_max_inflight == 0);
  // prime-rl's offloader runs without streams (ac_layers.h): the file is its RL trainer, so the
  // count changes no figure. For a trainer whose copies overlap compute (no Workload::trainer)
  // the timeline keeps that many layer inputs on the GPU: GLM-4.5-Air's peak falls in early
  // backward with the last in-flight inputs still there, one bf16 layer input (2 t h) fewer at
  // 3 than at the topology's 5; unset plans as 5.
  REQUIRE(glm.request.options.workload->trainer == "rl");
  const Topology topo = load_topology(repo_path("topologies/h200-ib.yaml"));
  auto planned = [&](int64_t inflight, const char* trainer) {
    PlanRequest r = glm.request;
    Workload w = *r.options.workload;
    w.ac_max_inflight = inflight;
    w.trainer = trainer;
    r.options.workload = w;
    return make_plan(glm.model.spec, topo, r).predicted;
  };
  auto inputs_bytes = [](const Prediction& p) {
    for (const Term& t : p.gpu_workload_bytes)
      if (t.name == "checkpointed_layer_inputs") return t.value;
    return 0.0;
  };
  CHECK(planned(3, "rl").gpu_peak_bytes() == planned(5, "rl").gpu_peak_bytes());
  const Prediction three = planned(3, ""), five = planned(5, ""), unset = planned(0, "");
  CHECK(unset.gpu_peak_bytes() == five.gpu_peak_bytes());
  CHECK(inputs_bytes(unset) == inputs_bytes(five));
  // Tokens per micro step: a row of seq_len over the file's cp (2).
  const Workload& w = *glm.request.options.workload;
  REQUIRE(glm.request.options.layout.cp == 2);
  const double t = double(w.seq_len) / glm.request.options.layout.cp * double(w.micro_batch_seqs);
  CHECK(inputs_bytes(five) - inputs_bytes(three) == 2 * t * double(glm.model.spec.hidden_size));
  CHECK(planned(5, "rl").gpu_peak_bytes() < five.gpu_peak_bytes());
  CHECK(plan_to_json(make_plan(glm.model.spec, topo, glm.request))["workload"]["ac_max_inflight"] ==
        3);
}

TEST_CASE("trainer config: ep auto is min(world / dp_replicate, 8) for MoE, else 1",
          "[trainer_config]") {
  TrainerConfig tc;
  const ModelSpec moe = load_model(repo_path("models/qwen3-30b-a3b.yaml"));
  const ModelSpec dense = load_model(repo_path("models/qwen3-8b.yaml"));
  CHECK(tc.resolved_ep(moe, 4) == 4);
  CHECK(tc.resolved_ep(moe, 32) == 8);
  tc.dp_replicate = 4;
  CHECK(tc.resolved_ep(moe, 32) == 8);
  CHECK(tc.resolved_ep(moe, 16) == 4);
  CHECK(tc.resolved_ep(dense, 32) == 1);
  tc.ep = 2;
  CHECK(tc.resolved_ep(moe, 32) == 2);
}

TEST_CASE("trainer config: writers may only name keys of the table", "[trainer_config]") {
  CHECK_THROWS_AS(trainer_key("model", "offload"), std::logic_error);  // no such prime-rl key
  CHECK(trainer_key("model", "full_offload").planned);
  CHECK(prime_rl_table("model", false) == "trainer.model");
  CHECK(prime_rl_table("optim", true) == "optim");
}

TEST_CASE("trainer config: muonplan comments carry what prime-rl has no key for",
          "[trainer_config]") {
  const std::string path = write_temp("comments.toml", R"([model]
name = "Qwen/Qwen3-8B"
cp = 1
optim_cpu_offload = false
# muonplan: offload = "full"
  #muonplan: bf16_momentum = true
# muonplan: ns_schedule = "custom"
# muonplan: newton_schulz_coefficients = [[3.4445, -4.775, 2.0315]]
# an ordinary comment: muonplan: is not at its start
[optim]
type = "muon"
)");
  const TrainerConfig tc = read_trainer_config(path);
  CHECK(tc.sft);
  CHECK(tc.value("offload")->text == "full");
  CHECK(tc.value("bf16-momentum")->text == "true");
  CHECK(tc.value("ns-schedule")->text ==
        "3.4445000000000001,-4.7750000000000004,2.0314999999999999");
  CHECK(tc.value("offload")->at.line == 5);
  std::ofstream(path, std::ios::app) << "# muonplan: bf16_momentum = false\n";  // twice
  CHECK(error_of([&] { read_trainer_config(path); }) ==
        path +
            ":12:29: toml: Error while parsing key-value pair: cannot redefine existing boolean "
            "'bf16_momentum'");
  std::filesystem::remove(path);
}

TEST_CASE("trainer config: the emitted config plans the same", "[trainer_config]") {
  const PlanInputs in = inputs("rl-glm-full.toml", "models/glm-4.5-air.yaml");
  const Topology topo = load_topology(repo_path("topologies/h200-ib.yaml"));
  const json first = plan_to_json(make_plan(in.model.spec, topo, in.request));
  EmitInput e;
  e.model_id = "zai-org/GLM-4.5-Air";
  e.ac_max_inflight = in.flags.ac_max_inflight;
  const std::string text = prime_rl_config(first, e);
  CHECK(text.find("ac_offloading = { max_inflight_activations = 3 }") != std::string::npos);
  CHECK(text.find("full_offload = true") != std::string::npos);
  PlanFlags again;
  again.trainer_config = write_temp("emitted.toml", text);
  const PlanInputs back = prepare_plan(repo_path("models/glm-4.5-air.yaml"), again);
  CHECK(back.flags.ac_max_inflight == 3);
  CHECK(plan_to_json(make_plan(back.model.spec, topo, back.request)) == first);
  std::filesystem::remove(again.trainer_config);
}

TEST_CASE("trainer config: keys to change name prime-rl's keys", "[trainer_config]") {
  const PlanInputs in = inputs("rl-glm-full.toml", "models/glm-4.5-air.yaml");
  const Topology topo = load_topology(repo_path("topologies/h200-ib.yaml"));
  const Plan written = make_plan(in.model.spec, topo, in.request);
  Candidate c;
  c.nodes = 4;
  c.layout = "fsdp=32,cp=1,ep=8";
  c.offload = OffloadMode::optimizer;
  const std::vector<std::string> keys = keys_to_change(*in.trainer, in.model.spec, written, c);
  CHECK(keys == std::vector<std::string>{"[deployment] num_train_nodes = 4",
                                         "[trainer.model] cp = 1",
                                         "[trainer.model] optim_cpu_offload = true",
                                         "[trainer.model] full_offload = false"});
  c.nodes = 2;
  c.layout = "fsdp=16,cp=2,ep=8";
  c.offload = OffloadMode::full;
  CHECK(keys_to_change(*in.trainer, in.model.spec, written, c).empty());
}

TEST_CASE("trainer config: docs/trainer-config.md lists every key of the table",
          "[trainer_config]") {
  std::ifstream in(repo_path("docs/trainer-config.md"));
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const TrainerKey& k : trainer_keys()) {
    INFO(k.table << " " << k.key);
    CHECK(doc.find("| `" + std::string(k.key) + "` |") != std::string::npos);
  }
}

// The emit's key names by date come from the one key-era table (prime_rl_versions.cc).
TEST_CASE("prime_rl_key_on: a key's name on a date", "[trainer_config]") {
  using muonplan::prime_rl_key_on;
  const std::string head = "fused_lm_head_token_chunk_size";
  CHECK(prime_rl_key_on("model", head, false, "") == head);  // the newest
  CHECK(prime_rl_key_on("model", head, false, "2026-03-09") == head);
  CHECK(prime_rl_key_on("model", head, false, "2026-03-08") == "fused_lm_head_chunk_size");
  CHECK(prime_rl_key_on("model", "optim_cpu_offload", false, "2026-02-02").empty());
  CHECK(prime_rl_key_on("model", "full_offload.numa_bind", false, "2026-08-14").empty());
  CHECK(prime_rl_key_on("model", "cp_style", false, "2026-05-04").empty());
  CHECK(prime_rl_key_on("orchestrator", "group_size", false, "2026-05-21") ==
        "rollouts_per_example");
  // The SFT rename leaves RL's [deployment] alone.
  CHECK(prime_rl_key_on("deployment", "num_train_gpus", true, "2026-08-16") == "num_gpus");
  CHECK(prime_rl_key_on("deployment", "num_train_gpus", false, "2026-08-16") == "num_train_gpus");
  CHECK(prime_rl_key_on("model", "ep", false, "2025-01-01") == "ep");  // no era: always
}

TEST_CASE("trainer config: expandable segments as prime-rl's launcher sets them, or env_vars",
          "[trainer_config]") {
  // Silent: prime-rl's launcher's PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.
  const PlanInputs dflt = inputs("rl-defaults.toml", "models/qwen3-30b-a3b.yaml");
  REQUIRE(dflt.request.options.expandable_segments.has_value());
  CHECK(*dflt.request.options.expandable_segments);
  // The file's env tables are merged over the launcher's: [trainer.env_vars] last, and
  // PYTORCH_ALLOC_CONF read before the CUDA name.
  const std::string off = write_temp("env-off.toml", R"([model]
name = "Qwen/Qwen3-0.6B"
[env_vars]
PYTORCH_CUDA_ALLOC_CONF = "expandable_segments:True"
[trainer.env_vars]
PYTORCH_CUDA_ALLOC_CONF = "max_split_size_mb:512"
)");
  const TrainerConfig tc = read_trainer_config(off);
  REQUIRE(tc.value("allocator"));
  CHECK(tc.value("allocator")->text == "default");
  CHECK(tc.value("allocator")->at.line == 6);
  const std::string on = write_temp("env-on.toml", R"([model]
name = "Qwen/Qwen3-0.6B"
[env_vars]
PYTORCH_CUDA_ALLOC_CONF = "expandable_segments:False"
PYTORCH_ALLOC_CONF = "expandable_segments:True"
)");
  CHECK(read_trainer_config(on).value("allocator")->text == "expandable");
  // The launcher's expandable segments came with #1480 (2025-12-24): a file of an earlier date
  // that sets nothing runs PyTorch's default allocator, and so does --runs-on's flag path.
  const std::string bare = write_temp("env-none.toml", "[model]\nname = \"Qwen/Qwen3-0.6B\"\n");
  CHECK(read_trainer_config(bare, "2025-12-23").value("allocator")->text == "default");
  CHECK(read_trainer_config(bare, "2025-12-24").value("allocator")->text == "expandable");
  PlanFlags old;
  old.runs_on = "prime-rl";
  old.prime_rl_version = "2025-12-01";
  CHECK_FALSE(
      *prepare_plan(repo_path("models/qwen3-0.6b.yaml"), old).request.options.expandable_segments);
  // --allocator on the command line wins.
  PlanFlags f;
  f.trainer_config = off;
  f.allocator = "expandable";
  CHECK(*prepare_plan(repo_path("models/qwen3-0.6b.yaml"), f).request.options.expandable_segments);
}
