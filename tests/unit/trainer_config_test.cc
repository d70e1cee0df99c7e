// --trainer-config: the TOML --emit toml writes, read back, plans the same; bad files and
// contradicting flags fail with one line naming the file, line and key.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>

#include "muonplan/error.h"
#include "muonplan/model_io.h"
#include "muonplan/plan_request.h"
#include "muonplan/trainer_config.h"
#include "muonplan/trainer_config_in.h"
#include "test_paths.h"

using namespace muonplan;
using json = nlohmann::json;

namespace {

using test::error_of;

// ctest runs each test case in its own process: the pid keeps parallel runs apart.
std::string write_temp(const std::string& name, const std::string& text) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("muonplan-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(path) << text;
  return path.string();
}

json plan_json(const std::string& model, const std::string& topology, const PlanFlags& flags) {
  return plan_to_json(make_plan(load_model(repo_path("models/" + model + ".yaml")),
                                load_topology(repo_path("topologies/" + topology + ".yaml")),
                                to_plan_request(flags)));
}

// Plans with `flags`, emits the TOML, and plans again from the TOML alone.
std::pair<json, json> round_trip(const std::string& model, const std::string& topology,
                                 const PlanFlags& flags, const std::string& name) {
  const json first = plan_json(model, topology, flags);
  PlanFlags again;
  again.trainer_config = write_temp(name, trainer_config_toml(first));
  const json second = plan_json(model, topology, again);
  std::filesystem::remove(again.trainer_config);
  return {first, second};
}

const char* kGood = R"([deployment]
num_nodes = 2
gpus_per_node = 4
world_size = 8

[model]
offload = "none"
fsdp_cpu_offload = false
optim_cpu_offload = false
dp_replicate = 2
dp_shard = 2
cp = 2
ep = 1
)";

}  // namespace

TEST_CASE("trainer config: muon plan with a workload round-trips", "[trainer_config]") {
  const PlanFlags f = plan_flags_from_map({{"nodes", "2"},
                                           {"layout", "fsdp=4,cp=2,ep=2"},
                                           {"offload", "optimizer"},
                                           {"offload-staging", "chunked"},
                                           {"pinned-state", "true"},
                                           {"bf16-momentum", "true"},
                                           {"nesterov", "true"},
                                           {"lr", "0.01"},
                                           {"momentum", "0.9"},
                                           {"weight-decay", "0.1"},
                                           {"update-rms", "0.25"},
                                           {"adamw-lr", "0.003"},
                                           {"adamw-weight-decay", "0.01"},
                                           {"adamw-betas", "0.8,0.99"},
                                           {"ns-schedule", "polar-express"},
                                           {"owners", "round-robin"},
                                           {"tokens-per-step", "4096"},
                                           {"seq-len", "256"},
                                           {"micro-batch-seqs", "2"},
                                           {"ac", "none"},
                                           {"lm-head-chunk", "128"},
                                           {"cp-style", "ring"},
                                           {"gpu-memory-gib", "2"},
                                           {"host-ram-gib", "16"}});
  const auto [first, second] = round_trip("tiny-moe", "cpu-ci", f, "muon.toml");
  CHECK(first["workload"]["cp_style"] == "ring");
  CHECK(first["workload"]["lm_head_chunk"] == 128);
  CHECK(first["optimizer_config"]["optimizer_offload_pinned"] == true);
  CHECK(second == first);

  // The flags the file sets are the ones given (the layout normalized).
  const std::string path = write_temp("flags.toml", trainer_config_toml(first));
  PlanFlags g;
  apply_trainer_config(path, g);
  std::filesystem::remove(path);
  for (const char* flag : {"offload",
                           "offload-staging",
                           "pinned-state",
                           "bf16-momentum",
                           "nesterov",
                           "lr",
                           "momentum",
                           "weight-decay",
                           "update-rms",
                           "adamw-lr",
                           "adamw-weight-decay",
                           "adamw-betas",
                           "ns-schedule",
                           "owners",
                           "tokens-per-step",
                           "seq-len",
                           "micro-batch-seqs",
                           "ac",
                           "lm-head-chunk",
                           "cp-style",
                           "gpu-memory-gib",
                           "host-ram-gib"}) {
    INFO(flag);
    CHECK(plan_flag_value(g, flag) == plan_flag_value(f, flag));
  }
  CHECK(g.layout == "fsdp=4,cp=2,ep=2");
  CHECK(g.nodes == "2");
  CHECK(g.gpus_per_node == 4);
}

TEST_CASE("trainer config: adamw and signsgd plans round-trip", "[trainer_config]") {
  const PlanFlags adamw = plan_flags_from_map({{"nodes", "1"},
                                               {"offload", "full"},
                                               {"optimizer", "adamw"},
                                               {"lr", "0.003"},
                                               {"adamw-weight-decay", "0.05"},
                                               {"adamw-betas", "0.85,0.98"},
                                               {"ns-schedule", "jordan"}});
  const auto [a1, a2] = round_trip("tiny-dense", "cpu-ci", adamw, "adamw.toml");
  CHECK(a2 == a1);
  const PlanFlags signsgd = plan_flags_from_map({{"nodes", "1"},
                                                 {"offload", "none"},
                                                 {"optimizer", "signsgd"},
                                                 {"include-mtp", "true"},
                                                 {"ns-schedule", "3,-3.2,1.2;3.5,-4,1.5"}});
  const auto [s1, s2] = round_trip("tiny-dense", "cpu-ci", signsgd, "signsgd.toml");
  CHECK(s1["optimizer_config"]["ns_schedule"] == "custom");
  CHECK(s2 == s1);
}

TEST_CASE("trainer config: a searched plan round-trips but for the search", "[trainer_config]") {
  auto [first, second] = round_trip("tiny-moe", "cpu-ci", PlanFlags{}, "auto.toml");
  // The file pins the node count and offload mode the search chose: one candidate is left.
  CHECK(second["decision"]["candidates"].size() == 1);
  first.erase("decision");
  second.erase("decision");
  CHECK(second == first);
}

TEST_CASE("trainer config: unknown, duplicate and malformed keys", "[trainer_config]") {
  auto error = [](const std::string& text, PlanFlags f = {}) {
    const std::string path = write_temp("bad.toml", text);
    const std::string e = error_of([&] { apply_trainer_config(path, f); });
    std::filesystem::remove(path);
    return e.substr(0, path.size()) == path ? "FILE" + e.substr(path.size()) : e;
  };
  CHECK(error("[model]\nofload = \"none\"\n") ==
        "FILE:2:1: model.ofload: unknown key in [model]; known: offload, fsdp_cpu_offload, "
        "optim_cpu_offload, dp_replicate, dp_shard, cp, ep");
  CHECK(error("# run\n[trainer]\n") ==
        "FILE:2:1: trainer: unknown table; known: [deployment], [model], [optim], [workload], "
        "[muonplan]");
  CHECK(error("[optim]\nlr = 0.01\n  lr = 0.02  # again\n") ==
        "FILE:3:3: optim.lr: given twice, at lines 2 and 3");
  CHECK(error("[optim]\n[model]\n[optim]\n") ==
        "FILE:3:1: optim: table given twice, at lines 1 and 3");
  CHECK(error("[optim]\nlr = inf\n") == "FILE:2:6: optim.lr: inf and nan are not accepted");
  CHECK(error("[optim]\nlr = 1_000\n") ==
        "FILE:2:6: optim.lr: expected a string, a number, true, false or an array, got '1_000'");
  CHECK(error("[optim]\nlr = 0.01 0.02\n") == "FILE:2:11: expected the end of the line");
  CHECK(error("[optim]\ntype = \"muon\n") == "FILE:2:13: optim.type: unterminated string");
  CHECK(error("[optim]\ntype = 'muon'\n") ==
        "FILE:2:8: optim.type: expected a string, a number, true, false or an array, got "
        "''muon''");
  CHECK(error("[deployment]\nnum_nodes = \"two\"\n") ==
        "FILE:2:13: deployment.num_nodes: expected an integer, got \"two\"");
  CHECK(error("[model]\noffload = \"partial\"\n") ==
        "FILE:2:11: model.offload: expected none, optimizer, full or auto, got 'partial'");
  CHECK(error("[optim]\ntype = \"adamw\"\nmu = 0.9\n") ==
        "FILE:3:1: optim.mu: not read for type = \"adamw\"");
  CHECK(error("[optim]\nns_schedule = \"quintic\"\nnewton_schulz_coefficients = [[1, 2, 3]]") ==
        "FILE:3:30: optim.newton_schulz_coefficients: not the 'quintic' schedule's; write "
        "ns_schedule = \"custom\" to plan with these coefficients");
  CHECK(error("[workload]\nseq_len = 256\ntokens_per_step = 4096\nmicro_batch_seqs = 0\n") ==
        "FILE:4:20: workload.micro_batch_seqs: must be positive");
}

TEST_CASE("trainer config: contradictions and conflicting flags", "[trainer_config]") {
  const std::string path = write_temp("run.toml", kGood);
  PlanFlags f;
  apply_trainer_config(path, f);
  CHECK(f.nodes == "2");
  CHECK(f.layout == "fsdp=4,cp=2,ep=1");
  CHECK(f.offload == "none");

  // Given flags equal to the file's are fine; different ones are refused.
  PlanFlags same = plan_flags_from_map({{"nodes", "2"}, {"layout", "fsdp=4,cp=2,ep=1"}});
  CHECK(error_of([&] { apply_trainer_config(path, same); }) == "");
  PlanFlags other = plan_flags_from_map({{"nodes", "3"}});
  CHECK(error_of([&] { apply_trainer_config(path, other); }) ==
        "--nodes: conflicts with " + path + ":2 (num_nodes = 2)");
  other = plan_flags_from_map({{"layout", "fsdp=8"}});
  CHECK(error_of([&] { apply_trainer_config(path, other); }) ==
        "--layout: conflicts with " + path + ":11 (dp_shard = 2, cp = 2, ep = 1)");
  other = plan_flags_from_map({{"workload", "w.yaml"}});
  std::ofstream(path, std::ios::app) << "[workload]\nseq_len = 256\ntokens_per_step = 4096\n";
  CHECK(error_of([&] { apply_trainer_config(path, other); }) ==
        "--workload: conflicts with " + path + ":15 ([workload])");

  auto contradiction = [&](const std::string& from, const std::string& to) {
    std::string text = kGood;
    text.replace(text.find(from), from.size(), to);
    const std::string bad = write_temp("contradiction.toml", text);
    const std::string e = error_of([&] {
      PlanFlags g;
      apply_trainer_config(bad, g);
    });
    std::filesystem::remove(bad);
    return e.substr(bad.size());
  };
  CHECK(contradiction("world_size = 8", "world_size = 16") ==
        ":4:14: deployment.world_size: expected num_nodes x gpus_per_node = 8, got 16");
  CHECK(contradiction("dp_replicate = 2", "dp_replicate = 1") ==
        ":10:16: model.dp_replicate: expected world_size / (dp_shard x cp) = 2, got 1");
  CHECK(contradiction("dp_shard = 2", "dp_shard = 3") ==
        ":11:12: model.dp_shard: dp_shard x cp = 6 does not divide world_size 8");
  CHECK(contradiction("fsdp_cpu_offload = false", "fsdp_cpu_offload = true") ==
        ":8:20: model.fsdp_cpu_offload: expected false for offload = \"none\"");
  std::filesystem::remove(path);

  PlanFlags g;
  CHECK(error_of([&] { apply_trainer_config("/nonexistent/run.toml", g); }) ==
        "/nonexistent/run.toml: file: cannot be read");
}
