// Regression tests for a hostile-input review (docs/reliability.md): the planner wrote plans the
// executor refused and silently dropped values (hyperparameters, limits), Newton-Schulz
// schedules were unbounded, plan shapes could exhaust memory, duplicate and unknown keys were
// read silently, and metrics with absurd numbers reached the report script. Each of these
// inputs was accepted (or crashed) before, and is now an InputError with one line.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <functional>

#include "muonplan/error.h"
#include "muonplan/model_io.h"
#include "muonplan/plan.h"
#include "muonplan/plan_checks.h"
#include "muonplan/plan_request.h"
#include "muonplan/report_data.h"
#include "test_paths.h"

using namespace muonplan;
using json = nlohmann::json;

namespace {

std::string error_of(const std::function<void()>& f) {
  return test::error_of(f, "(accepted)");
}

// The request `muonplan plan` (and muonplan.plan in Python) builds from these flags.
std::string flags_error(const std::map<std::string, std::string>& flags) {
  return error_of([&] { to_plan_request(plan_flags_from_map(flags)); });
}

PlanRequest one_rank() {
  PlanRequest r;
  r.options.nodes = 1;
  r.options.gpus_per_node = 1;
  r.options.offload = OffloadMode::none;
  return r;
}

json tiny_plan(const PlanRequest& r = one_rank()) {
  return plan_to_json(make_plan(load_model(repo_path("models/tiny-dense.yaml")),
                                load_topology(repo_path("topologies/cpu-ci.yaml")), r));
}

std::string plan_error_after(const std::function<void(json&)>& edit) {
  json j = tiny_plan();
  edit(j);
  return error_of([&] { plan_from_json(j, "plan.json"); });
}

// A file for the loaders that take a path; removed with the object.
struct TempFile {
  std::string path;
  TempFile(const std::string& name, const std::string& text) : path(name) {
    std::ofstream(path, std::ios::binary) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
};

std::string schedule_of(int steps) {
  std::string s;
  for (int i = 0; i < steps; ++i) s += (i ? ";" : "") + std::string("3.4445,-4.775,2.0315");
  return s;
}

}  // namespace

TEST_CASE("findings: hyperparameters the executor refuses are refused by the planner",
          "[findings]") {
  // Each was accepted: inf and nan were written as null, 2 ran into the executor's refusal.
  CHECK(flags_error({{"lr", "inf"}}) == "--lr: must be a finite number > 0, got inf");
  CHECK(flags_error({{"lr", "0"}}) == "--lr: must be a finite number > 0, got 0");
  CHECK(flags_error({{"weight_decay", "nan"}}) ==
        "--weight-decay: must be a finite number >= 0, got nan");
  CHECK(flags_error({{"momentum", "2"}}) == "--momentum: must be in (0, 1), got 2");
  CHECK(flags_error({{"momentum", "1"}}) == "--momentum: must be in (0, 1), got 1");
  CHECK(flags_error({{"ns_schedule", ""}}) ==
        "--ns-schedule: expected 1 to 64 (a, b, c) steps, got 0");
  CHECK(flags_error({{"adamw_lr", "-1"}}) == "--adamw-lr: must be a finite number > 0, got -1");
  CHECK(flags_error({{"adamw_weight_decay", "inf"}}) ==
        "--adamw-weight-decay: must be a finite number >= 0, got inf");
  CHECK(flags_error({{"adamw_betas", "0.9,1"}}) == "--adamw-betas: must be in [0, 1), got 1");
  CHECK(flags_error({{"adamw_betas", "nan,0.9"}}) == "--adamw-betas: must be in [0, 1), got nan");
  CHECK(flags_error({{"lr", "0.02"}, {"momentum", "0.9"}}) == "(accepted)");
}

TEST_CASE("findings: a value given is never silently replaced by the default", "[findings]") {
  // 0 means "not given" in PlanFlags; given explicitly it was replaced by the default.
  CHECK(flags_error({{"update_rms", "0"}}) == "--update-rms: must be a finite number > 0, got 0");
  CHECK(flags_error({{"update_rms", "-3"}}) == "--update-rms: must be a finite number > 0, got -3");
  CHECK(flags_error({{"update_rms", "nan"}}) ==
        "--update-rms: must be a finite number > 0, got nan");
  CHECK(flags_error({{"gpus_per_node", "0"}}) ==
        "--gpus-per-node: expected a positive integer, got '0'");
  CHECK(flags_error({{"gpus_per_node", "-4"}}) ==
        "--gpus-per-node: expected a positive integer, got '-4'");
  CHECK(flags_error({{"max_nodes", "0"}}) == "--max-nodes: expected a positive integer, got '0'");
  CHECK(flags_error({{"gpu_memory_gib", "nan"}}) ==
        "--gpu-memory-gib: must be a finite number > 0, got nan");
  CHECK(flags_error({{"host_ram_gib", "0"}}) ==
        "--host-ram-gib: must be a finite number > 0, got 0");
  // Set in the struct (C++ callers), negatives are refused by to_plan_request itself.
  PlanFlags f;
  f.gpus_per_node = -4;
  CHECK(error_of([&] { to_plan_request(f); }) ==
        "--gpus-per-node: expected a positive integer, got '-4'");
  f = PlanFlags{};
  f.hyper.update_rms = -1;
  CHECK(error_of([&] { to_plan_request(f); }) ==
        "--update-rms: must be a finite number > 0, got -1");
  f = PlanFlags{};
  f.gpu_memory_gib = -3;
  CHECK(error_of([&] { to_plan_request(f); }) ==
        "--gpu-memory-gib: must be a finite number > 0, got -3");
  // Not given: the defaults.
  CHECK(flags_error({}) == "(accepted)");
  CHECK(flags_error({{"update_rms", "0.18"}, {"gpus_per_node", "4"}}) == "(accepted)");
}

TEST_CASE("findings: whatever plan accepts, the plan loader accepts, and the reverse",
          "[findings]") {
  // One check (check_optimizer_config) on both sides: for each value, the flag and the plan
  // field are refused together, with the same message.
  struct Case {
    const char* flag;
    std::vector<const char*> key;  // under optimizer_config
    std::vector<double> values;
  };
  const std::vector<Case> cases = {
      {"lr", {"lr"}, {0.02, 1e-9, 0, -1, 1e308}},
      {"momentum", {"momentum"}, {0.95, 0.5, 1e-9, 0, 1, 1.5, -0.1}},
      {"weight_decay", {"weight_decay"}, {0, 0.1, -0.1, 1e308}},
      {"update_rms", {"update_rms"}, {0.2, 1e-6, -1}},
      {"adamw_lr", {"adamw", "lr"}, {0.001, -0.5}},
      {"adamw_weight_decay", {"adamw", "weight_decay"}, {0, 0.05, -1}},
  };
  for (const Case& c : cases) {
    for (double v : c.values) {
      char text[40];
      std::snprintf(text, sizeof text, "%.17g", v);
      INFO(c.flag << " = " << text);
      PlanRequest request;
      std::string planner_error;
      try {
        request = to_plan_request(plan_flags_from_map(
            {{c.flag, text}, {"nodes", "1"}, {"gpus_per_node", "1"}, {"offload", "none"}}));
      } catch (const InputError& e) {
        planner_error = e.message();
      }
      json j = tiny_plan();
      json* field = &j["optimizer_config"];
      for (const char* k : c.key) field = &(*field)[k];
      *field = v;
      std::string loader_error;
      try {
        plan_from_json(j, "plan.json");
      } catch (const InputError& e) {
        loader_error = e.message();
      }
      CHECK(planner_error == loader_error);
      if (planner_error.empty()) {  // what plan writes, execute reads back
        CHECK_NOTHROW(plan_from_json(tiny_plan(request), "plan.json"));
      }
    }
  }
}

TEST_CASE("findings: Newton-Schulz schedules have at most 64 steps", "[findings]") {
  CHECK(ns_schedule(schedule_of(64)).steps.size() == 64);
  CHECK(error_of([] { ns_schedule(schedule_of(65)); }) ==
        "--ns-schedule: expected 1 to 64 (a, b, c) steps, got 65");
  CHECK(flags_error({{"ns_schedule", schedule_of(65)}}) ==
        "--ns-schedule: expected 1 to 64 (a, b, c) steps, got 65");
  CHECK(plan_error_after([](json& j) {
          j["optimizer_config"]["newton_schulz_coefficients"] =
              json(std::vector<json>(65, {3.4445, -4.775, 2.0315}));
        }) ==
        "plan.json: optimizer_config.newton_schulz_coefficients: expected 1 to 64 (a, b, "
        "c) steps, got 65");
  CHECK(plan_error_after([](json& j) {
          j["optimizer_config"]["newton_schulz_coefficients"] =
              json(std::vector<json>(64, {3.4445, -4.775, 2.0315}));
        }) == "(accepted)");
}

TEST_CASE("findings: plan values the executor would trip on are refused at load", "[findings]") {
  // inf and nan were written as null by earlier planners.
  CHECK(plan_error_after([](json& j) { j["optimizer_config"]["lr"] = nullptr; }) ==
        "plan.json: optimizer_config.lr: expected a number, got null");
  CHECK(plan_error_after([](json& j) { j["optimizer_config"]["adamw"]["beta2"] = 1; }) ==
        "plan.json: optimizer_config.adamw.beta2: must be in [0, 1), got 1");
  CHECK(plan_error_after([](json& j) { j["optimizer_config"]["adamw"]["eps"] = 0; }) ==
        "plan.json: optimizer_config.adamw.eps: must be a finite number > 0, got 0");
  CHECK(plan_error_after([](json& j) { j["optimizer_config"]["ns_norm_scale"] = -1; }) ==
        "plan.json: optimizer_config.ns_norm_scale: must be a finite number > 0, got -1");
  // A shape of [1000, 10^9] was a std::bad_alloc in the executor.
  CHECK(plan_error_after([](json& j) {
          j["tensors"][0]["shape"] = {1000, 1000000000};
        }) ==
        "plan.json: tensors[0].shape[1]: expected an integer in [1, 100000000], got 1000000000");
}

TEST_CASE("findings: keys plan_to_json does not write are refused", "[findings]") {
  CHECK(plan_error_after([](json& j) { j["lr"] = 0.1; }) ==
        "plan.json: lr: unknown key (muonplan plan does not write it)");
  CHECK(plan_error_after([](json& j) { j["optimizer_config"]["momentun"] = 0.9; }) ==
        "plan.json: optimizer_config.momentun: unknown key (muonplan plan does not write it)");
  CHECK(plan_error_after([](json& j) { j["optimizer_config"]["adamw"]["beta3"] = 0.9; }) ==
        "plan.json: optimizer_config.adamw.beta3: unknown key (muonplan plan does not write it)");
  CHECK(plan_error_after([](json& j) { j["chunks"][0]["owner"] = {0}; }) ==
        "plan.json: chunks[0].owner: unknown key (muonplan plan does not write it)");
  CHECK(plan_error_after([](json& j) { j["tensors"][1]["dtype"] = "f32"; }) ==
        "plan.json: tensors[1].dtype: unknown key (muonplan plan does not write it)");
  CHECK(plan_error_after([](json& j) { j["layout"]["tp"] = 2; }) ==
        "plan.json: layout.tp: unknown key (muonplan plan does not write it)");
  CHECK(plan_error_after([](json&) {}) == "(accepted)");
}

TEST_CASE("findings: duplicate keys in our JSON formats are refused naming both lines",
          "[findings]") {
  const std::string text =
      "{\n  \"a\": {\"b\": 1,\n    \"c\": [{\"d\": 1}, {\"d\": 2,\n  \"d\": 3}]},\n"
      "  \"e\": 1, \"a\": 2\n}\n";
  const std::vector<DuplicateKey> dups = find_duplicate_keys(text, "x.json");
  REQUIRE(dups.size() == 2);
  CHECK(dups[0].field == "a.c[1].d");
  CHECK(dups[0].first.line == 3);
  CHECK(dups[0].second.line == 4);
  CHECK(dups[0].second.col == 3);
  CHECK(dups[1].field == "a");
  CHECK(error_of([&] { refuse_duplicate_keys(text, "x.json"); }) ==
        "x.json:4:3: a.c[1].d: given twice, at lines 3 and 4");
  // Escapes name the same key; quotes and brackets inside strings are not structure.
  CHECK(find_duplicate_keys("{\"k\": \"}\\\"{\", \"\\u006b\": 1}", "y").size() == 1);
  CHECK(find_duplicate_keys("[{\"k\": 1}, {\"k\": 2}]", "y").empty());

  // A plan: nlohmann kept the last value silently.
  std::string plan = tiny_plan().dump(1);
  const size_t at = plan.find("\"momentum\":");
  plan.insert(at, "\"momentum\": 0.5,\n");
  const TempFile f("findings_dup_plan.json", plan);
  CHECK(error_of([&] { load_plan(f.path); }).find("findings_dup_plan.json:") == 0);
  CHECK(error_of([&] { load_plan(f.path); }).find(": optimizer_config.momentum: given twice") !=
        std::string::npos);
}

TEST_CASE("findings: duplicate keys in our YAML formats are refused naming both lines",
          "[findings]") {
  std::ifstream in(repo_path("models/tiny-dense.yaml"));
  std::string model((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // yaml-cpp looks up the first: hidden_size 250 planned, 300 ignored.
  std::string dup = model;
  dup.replace(dup.find("num_layers: 5"), 13, "num_layers: 5\nnum_layers: 7");
  CHECK(error_of([&] { parse_model_yaml(dup, "m.yaml"); }) ==
        "m.yaml:10:1: num_layers: given twice, at lines 9 and 10");
  std::string nested = model;
  nested.replace(nested.find("  qk_norm: true"), 14, "  qk_norm: true\n  qk_norm: false");
  CHECK(error_of([&] { parse_model_yaml(nested, "m.yaml"); }) ==
        "m.yaml:15:3: attention.qk_norm: given twice, at lines 14 and 15");
  // Aliases are walked once each: a document of nested aliases stays linear.
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'z'; ++c) {
    laughs += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) laughs += std::string(i ? ", " : "") + "*" + char(c - 1);
    laughs += "]\n";
  }
  CHECK(error_of([&] { parse_model_yaml(laughs, "l.yaml"); }).find("l.yaml") == 0);

  std::ifstream tin(repo_path("topologies/cpu-ci.yaml"));
  std::string topo((std::istreambuf_iterator<char>(tin)), std::istreambuf_iterator<char>());
  const size_t at = topo.find("max_nodes:");
  REQUIRE(at != std::string::npos);
  topo.insert(at, "max_nodes: 64\n");
  CHECK(error_of([&] {
          parse_topology(topo, "t.yaml");
        }).find(": max_nodes: given twice, at lines ") != std::string::npos);

  const TempFile w("findings_dup_workload.yaml",
                   "tokens_per_step: 1048576\nseq_len: 4096\nseq_len: 8192\n");
  CHECK(error_of([&] { load_workload(w.path); }) ==
        w.path + ":3:1: seq_len: given twice, at lines 2 and 3");
}

TEST_CASE("findings: names that are not UTF-8 are refused where they are read", "[findings]") {
  CHECK(is_valid_utf8("glm-4.5-air"));
  CHECK(is_valid_utf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));  // é € 😀
  CHECK_FALSE(is_valid_utf8("tiny\xff"));
  CHECK_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong '/'
  CHECK_FALSE(is_valid_utf8("\xed\xa0\x80"));      // a surrogate
  CHECK_FALSE(is_valid_utf8("\xe2\x82"));          // cut short
  CHECK_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  std::ifstream in(repo_path("models/tiny-dense.yaml"));
  std::string model((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  model.replace(model.find("name: tiny-dense"), 16, "name: tiny\xff");
  // It passed inspect, then every JSON output threw nlohmann's type_error (exit 1).
  CHECK(error_of([&] { parse_model_yaml(model, "m.yaml"); }) ==
        "m.yaml:5:7: name: is not valid UTF-8");
}

TEST_CASE("findings: metrics files are checked before the report or a fit uses them",
          "[findings]") {
  std::ifstream in(repo_path("tests/data/calibration/cpu/dense-full.metrics.json"));
  const json good = json::parse(in);
  auto error_after = [&](const std::function<void(json&)>& edit) {
    json j = good;
    edit(j);
    return error_of([&] { check_metrics(j, "m.json"); });
  };
  CHECK(error_after([](json&) {}) == "(accepted)");
  // 1e308 made reports/report.py print a 25-line traceback.
  CHECK(error_after([](json& j) { j["measured"]["optimizer_step_s"] = 1e308; }) ==
        "m.json: measured.optimizer_step_s: expected a number in [0, 1e18], got 1e+308");
  CHECK(error_after([](json& j) { j["measured"]["busy_s"]["device"] = -1; }) ==
        "m.json: measured.busy_s.device: expected a number in [0, 1e18], got -1");
  CHECK(error_after([](json& j) { j["measured"]["peak_bytes"] = "many"; }) ==
        "m.json: measured.peak_bytes: expected a number, got \"many\"");
  CHECK(error_after([](json& j) { j["measured"]["state_digest"] = 7; }) ==
        "m.json: measured.state_digest: expected a string, got 7");
  CHECK(error_after([](json& j) { j["schema"] = "muonplan.metrics/9"; }) ==
        "m.json: schema: expected muonplan.metrics/1, got 'muonplan.metrics/9'");
  CHECK(error_after([](json& j) { j["schema"] = 1; }) ==
        "m.json: schema: expected muonplan.metrics/1, got 1");
  CHECK(error_after([](json& j) { j.erase("predicted"); }) ==
        "m.json: predicted: missing (expected the metrics of muonplan execute)");

  // load_metrics (report) applies it, duplicate keys included.
  std::string text = good.dump(1);
  text.insert(text.find("\"peak_bytes\""), "\"peak_bytes\": 1,\n");
  const TempFile f("findings_dup_metrics.json", text);
  CHECK(error_of([&] { load_metrics(f.path); }).find(": measured.peak_bytes: given twice") !=
        std::string::npos);
}

TEST_CASE("findings: model tensors are bounded as plan tensors are", "[findings]") {
  // heads x head_dim past 10^8 rows: each field within its bound, the product not.
  const std::string yaml =
      "name: x\nvocab_size: 10\nhidden_size: 1000\nnum_layers: 1\n"
      "attention:\n  num_heads: 20000\n  head_dim: 10000\n  num_kv_heads: 1\n"
      "mlp:\n  intermediate_size: 10\n";
  CHECK(error_of([&] { parse_model_yaml(yaml, "m.yaml"); }).find("m.yaml: model: tensor ") == 0);
  CHECK(error_of([&] {
          parse_model_yaml(yaml, "m.yaml");
        }).find("has a dimension of 200000000, more than muonplan plans for (100000000)") !=
        std::string::npos);
}
