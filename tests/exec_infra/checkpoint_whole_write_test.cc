// write_whole_checkpoint: whole tensors cut into a plan's shards and read back whole, with its
// checks inside the writer (names, shapes, missing params, the step bound, damaged values).
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <limits>

#include "muonplan/base/error.h"
#include "muonplan/exec/bf16.h"
#include "muonplan/exec/checkpoint.h"
#include "muonplan/planner/model_io.h"
#include "muonplan/planner/plan.h"
#include "test_plans.h"

using namespace muonplan;
using namespace muonplan::exec;
namespace fs = std::filesystem;

namespace {

Plan tiny_plan(bool bf16_momentum) {
  PlanRequest r;
  r.options.nodes = 1;
  r.options.gpus_per_node = 4;
  r.options.bf16_momentum = bf16_momentum;
  return make_plan(load_model(repo_path("models/tiny-moe.yaml")),
                   load_topology(repo_path("topologies/cpu-ci.yaml")), r);
}

struct Dir {
  std::string path =
      (fs::temp_directory_path() /
       ("muonplan_whole_write_" + std::to_string(::getpid()) + "_" + std::to_string(counter++)))
          .string();
  static inline int counter = 0;
  ~Dir() {
    for (const char* s : {"", ".tmp", ".old", ".lock"}) fs::remove_all(path + s);
  }
};

// Every param of the plan, element k of tensor i = i + k / 1024 (exact in fp32); the momentum
// of the first Muon tensor 1/3 everywhere (not exact in bf16).
struct Given {
  std::vector<std::vector<float>> values;
  std::map<std::string, WholeTensorIn> tensors;
  std::string muon_name;
  explicit Given(const Plan& p) {
    values.reserve(p.inventory.tensors.size() + 1);
    for (size_t i = 0; i < p.inventory.tensors.size(); ++i) {
      const ParamTensor& t = p.inventory.tensors[i];
      std::vector<float> v(size_t(t.numel()));
      for (size_t k = 0; k < v.size(); ++k) v[k] = float(i) + float(k) / 1024.0f;
      values.push_back(std::move(v));
      tensors[t.name + "/param"] = {t.shape, values.back().data()};
      if (muon_name.empty() && t.rule == UpdateRule::muon) {
        muon_name = t.name;
        values.emplace_back(size_t(t.numel()), 1.0f / 3.0f);
        tensors[t.name + "/momentum"] = {t.shape, values.back().data()};
      }
    }
  }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(written)";
}

}  // namespace

TEST_CASE("write_whole_checkpoint: whole tensors read back whole, momentum in the plan's dtype",
          "[exec-infra]") {
  const Plan p = tiny_plan(true);
  const Given g(p);
  Dir d;
  write_whole_checkpoint(d.path, p, 7, g.tensors);
  const WholeCheckpoint w = read_whole_checkpoint(d.path);
  CHECK(w.step == 7);
  int params = 0;
  for (const WholeEntry& e : w.entries) {
    const size_t slash = e.name.rfind('/');
    const std::string field = e.name.substr(slash + 1);
    if (field == "param") {
      ++params;
      const WholeTensorIn& in = g.tensors.at(e.name);
      REQUIRE(e.shape == in.shape);
      const auto* got = reinterpret_cast<const float*>(e.bytes.data());
      CHECK(std::equal(got, got + e.bytes.size() / 4, in.data));
    } else if (e.name == g.muon_name + "/momentum") {
      REQUIRE(e.dtype == "bf16");  // --bf16-momentum: rounded to nearest even
      const auto* got = reinterpret_cast<const bf16*>(e.bytes.data());
      CHECK(to_float(got[0]) == to_float(to_bf16(1.0f / 3.0f)));
      CHECK(to_float(got[0]) != 1.0f / 3.0f);
    } else {
      // Not given: a fresh optimizer's zeros.
      CHECK(std::all_of(e.bytes.begin(), e.bytes.end(), [](uint8_t b) { return b == 0; }));
    }
  }
  CHECK(params == int(p.inventory.tensors.size()));
}

TEST_CASE("write_whole_checkpoint: refusals name the entry and write nothing", "[exec-infra]") {
  const Plan p = tiny_plan(false);
  const ParamTensor& first = p.inventory.tensors.front();
  Dir d;
  {
    Given g(p);
    g.tensors.erase(first.name + "/param");
    CHECK(error_of([&] { write_whole_checkpoint(d.path, p, 1, g.tensors); }) ==
          first.name + "/param: missing");
  }
  {
    Given g(p);
    g.tensors[first.name + "/param"].shape = {3, 4};
    CHECK(error_of([&] {
            write_whole_checkpoint(d.path, p, 1, g.tensors);
          }).find(first.name + "/param: shape [3,4], the plan's tensor is [") == 0);
  }
  {
    Given g(p);
    g.tensors["nope/param"] = g.tensors.at(first.name + "/param");
    CHECK(error_of([&] {
            write_whole_checkpoint(d.path, p, 1, g.tensors);
          }).find("nope/param: not <tensor>/param") == 0);
  }
  {
    Given g(p);
    g.values.front()[5] = std::numeric_limits<float>::quiet_NaN();
    CHECK_THAT(error_of([&] { write_whole_checkpoint(d.path, p, 1, g.tensors); }),
               Catch::StartsWith(first.name + "/param: ") &&
                   Catch::EndsWith("; --resume would refuse the checkpoint as damaged"));
  }
  for (int64_t step : {int64_t(-1), kMaxCheckpointStep + 1}) {
    Given g(p);
    CHECK(error_of([&] { write_whole_checkpoint(d.path, p, step, g.tensors); }) ==
          "step: expected an integer in [0, 10^15], got " + std::to_string(step));
  }
  CHECK(!fs::exists(d.path));
  CHECK(checkpoint_step_fault(kMaxCheckpointStep).empty());
  CHECK(checkpoint_step_fault(0).empty());
}
