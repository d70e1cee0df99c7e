// The checks every front end and loader shares (muonplan/planfile/plan_checks.h), from a
// hostile-input review (docs/reliability.md): hyperparameters the executor refuses are refused by
// the planner, alike from flags and from a plan file; duplicate keys in our JSON formats, names
// that are not UTF-8 and metrics with absurd numbers are InputErrors with one line. Each of
// these inputs was accepted (or crashed) before.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <functional>

#include "muonplan/base/error.h"
#include "muonplan/base/json_bounds.h"
#include "muonplan/planfile/plan_checks.h"
#include "muonplan/planner/model_io.h"
#include "muonplan/planner/plan.h"
#include "muonplan/planner/plan_request.h"
#include "muonplan/tools/report_data.h"
#include "test_plans.h"

using namespace muonplan;
using json = nlohmann::json;
using test::flags_error;
using test::TempFile;
using test::tiny_plan;

namespace {

// test::error_of, with "(accepted)" for no error.
std::string refusal_of(const std::function<void()>& f) {
  return test::error_of(f, "(accepted)");
}

}  // namespace

TEST_CASE("hyperparameters the executor refuses are refused by the planner", "[plan_checks]") {
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

TEST_CASE("whatever plan accepts, the plan loader accepts, and the reverse", "[plan_checks]") {
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
      {"weight_decay", {"weight_decay"}, {0, 0.1, -0.1, 1e308, 50, 50.5, 1e30}},
      {"update_rms", {"update_rms"}, {0.2, 1e-6, -1}},
      {"adamw_lr", {"adamw", "lr"}, {0.001, -0.5}},
      {"adamw_weight_decay", {"adamw", "weight_decay"}, {0, 0.05, -1, 60.5}},
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

TEST_CASE("duplicate keys in our JSON formats are refused naming both lines", "[plan_checks]") {
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
  CHECK(refusal_of([&] { refuse_duplicate_keys(text, "x.json"); }) ==
        "x.json:4:3: a.c[1].d: given twice, at lines 3 and 4");
  // Escapes name the same key; quotes and brackets inside strings are not structure.
  CHECK(find_duplicate_keys("{\"k\": \"}\\\"{\", \"\\u006b\": 1}", "y").size() == 1);
  CHECK(find_duplicate_keys("[{\"k\": 1}, {\"k\": 2}]", "y").empty());

  // A plan: nlohmann kept the last value silently.
  std::string plan = tiny_plan().dump(1);
  const size_t at = plan.find("\"momentum\":");
  plan.insert(at, "\"momentum\": 0.5,\n");
  const TempFile f("findings_dup_plan.json", plan);
  CHECK(refusal_of([&] { load_plan(f.path); }).find("findings_dup_plan.json:") == 0);
  CHECK(refusal_of([&] { load_plan(f.path); }).find(": optimizer_config.momentum: given twice") !=
        std::string::npos);
}

TEST_CASE("names that are not UTF-8 are refused where they are read", "[plan_checks]") {
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
  CHECK(refusal_of([&] { parse_model_yaml(model, "m.yaml"); }) ==
        "m.yaml:5:7: name: is not valid UTF-8");
}

TEST_CASE("metrics files are checked before the report or a fit uses them", "[plan_checks]") {
  std::ifstream in(repo_path("tests/data/calibration/cpu/dense-full.metrics.json"));
  const json good = json::parse(in);
  auto error_after = [&](const std::function<void(json&)>& edit) {
    json j = good;
    edit(j);
    return refusal_of([&] { check_metrics(j, "m.json"); });
  };
  CHECK(error_after([](json&) {}) == "(accepted)");
  // 1e308 made reports/report.py print a 25-line traceback.
  CHECK(error_after([](json& j) { j["measured"]["optimizer_step_s"] = 1e308; }) ==
        "m.json: measured.optimizer_step_s: expected a number in [0, 1e18], got 1e+308");
  CHECK(error_after([](json& j) { j["measured"]["busy_s"]["gpu"] = -1; }) ==
        "m.json: measured.busy_s.gpu: expected a number in [0, 1e18], got -1");
  CHECK(error_after([](json& j) { j["measured"]["gpu_peak_gib"] = "many"; }) ==
        "m.json: measured.gpu_peak_gib: expected a number, got \"many\"");
  CHECK(error_after([](json& j) { j["measured"]["state_digest"] = 7; }) ==
        "m.json: measured.state_digest: expected a string, got 7");
  CHECK(error_after([](json& j) { j["schema"] = "muonplan.metrics/9"; }) ==
        "m.json: schema: expected muonplan.metrics/2, got 'muonplan.metrics/9'");
  CHECK(error_after([](json& j) { j["schema"] = 1; }) ==
        "m.json: schema: expected muonplan.metrics/2, got 1");
  CHECK(error_after([](json& j) { j.erase("predicted"); }) ==
        "m.json: predicted: missing (expected the metrics of muonplan execute)");

  // load_metrics (report) applies it, duplicate keys included.
  std::string text = good.dump(1);
  text.insert(text.find("\"gpu_peak_gib\""), "\"gpu_peak_gib\": 1,\n");
  const TempFile f("findings_dup_metrics.json", text);
  CHECK(refusal_of([&] { load_metrics(f.path); }).find(": measured.gpu_peak_gib: given twice") !=
        std::string::npos);
}

TEST_CASE("names: printable UTF-8, not empty; printable() escapes", "[names]") {
  CHECK(name_problem("qwen3-8b").empty());
  CHECK(name_problem("modèle").empty());
  CHECK(name_problem("") == "must not be empty");
  CHECK(name_problem("a\x1b[31m") == "must be printable text, got the control character U+001B");
  CHECK(name_problem("a\u0085") == "must be printable text, got the control character U+0085");
  CHECK(name_problem("a\u202e") == "must be printable text, got the control character U+202E");
  CHECK(name_problem(std::string("a\0b", 3)) ==
        "must be printable text, got the control character U+0000");
  CHECK(name_problem("\xff") == "is not valid UTF-8");
  CHECK(printable("a\nb\\c\u0085é") == "a\\x0Ab\\x5Cc\\u0085é");
  CHECK(printable("\xff") == "\\xFF");
}

TEST_CASE("JSON counts: arrays and values bounded, strings skipped", "[json]") {
  std::string ok = "[", over = "[";
  for (int64_t i = 0; i < kMaxJsonArrayElements; ++i) ok += i ? ",1" : "1";
  over = ok + ",1]";
  ok += "]";
  CHECK_NOTHROW(check_json_bounds(ok, "a.json"));
  CHECK_THROWS_AS(check_json_bounds(over, "a.json"), InputError);
  // Commas inside strings are not elements.
  CHECK_NOTHROW(check_json_bounds("[\"" + std::string(3 << 20, ',') + "\"]", "s.json"));
}
