// The step on one process (self communicator): packed partitions step like separate matrices,
// Nesterov and weight decay follow docs/muon-step.md section 2 exactly, the momentum fold adds up.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <map>

#include "muonplan/exec/communicator.h"
#include "muonplan/exec/newton_schulz.h"
#include "muonplan/exec/rank_state.h"
#include "muonplan/exec/step.h"
#include "muonplan/planner/model_io.h"
#include "test_plans.h"

using namespace muonplan;
using namespace muonplan::exec;
using muonplan::test::one_rank_plan;

namespace {

std::vector<float> read(const RankState& s, const float* ptr, int64_t n) {
  std::vector<float> out(n);
  s.backend().copy_to_host(out.data(), ptr, n * sizeof(float));
  return out;
}

// Copies rows [row0, row0 + rows) of every local array of `src` tensor into `dst`.
void copy_rows(RankState& from, int src, RankState& to, int dst, int64_t row0) {
  LocalParam& a = from.param(src);
  LocalParam& b = to.param(dst);
  const int64_t n = b.elems(), off = row0 * a.entry_elems;
  for (auto [pa, pb] : {std::pair{a.w, b.w}, {a.g, b.g}}) {
    std::vector<float> tmp = read(from, pa + off, n);
    to.backend().copy_to_device(pb, tmp.data(), n * sizeof(float));
  }
}

}  // namespace

TEST_CASE("a packed qkv or gate_up parameter steps exactly like its separate matrices", "[step]") {
  ModelSpec fused = load_model_yaml(std::string(MUONPLAN_SOURCE_DIR) + "/models/tiny-dense.yaml");
  REQUIRE(fused.storage.fused_qkv);
  REQUIRE(fused.storage.fused_gate_up);
  ModelSpec split = fused;
  split.storage.fused_qkv = split.storage.fused_gate_up = false;
  const Plan pa = one_rank_plan(build_inventory(fused));
  const Plan pb = one_rank_plan(build_inventory(split));
  std::unique_ptr<Backend> backend = make_cpu_backend();
  RankState a(pa, *backend, 0), b(pb, *backend, 0);
  a.init_params();
  a.load_grads(1);
  std::map<std::string, int> index;
  for (size_t t = 0; t < pa.inventory.tensors.size(); ++t) index[pa.inventory.tensors[t].name] = t;
  // Where each separate tensor sits in the fused model: (fused tensor, first row).
  auto source = [&](const std::string& name) -> std::pair<int, int64_t> {
    if (index.count(name)) return {index[name], 0};
    const AttentionSpec& at = fused.attention;
    const int64_t q = at.num_heads * at.head_dim, kv = at.num_kv_heads * at.head_dim;
    const size_t dot = name.rfind('.', name.size() - 8);  // before "<proj>.weight"
    const std::string prefix = name.substr(0, dot + 1), proj = name.substr(dot + 1);
    if (proj == "q_proj.weight") return {index.at(prefix + "qkv_proj.weight"), 0};
    if (proj == "k_proj.weight") return {index.at(prefix + "qkv_proj.weight"), q};
    if (proj == "v_proj.weight") return {index.at(prefix + "qkv_proj.weight"), q + kv};
    if (proj == "gate_proj.weight") return {index.at(prefix + "gate_up_proj.weight"), 0};
    if (proj == "up_proj.weight")
      return {index.at(prefix + "gate_up_proj.weight"), fused.intermediate_size};
    FAIL("no source for " << name);
    return {0, 0};
  };
  for (size_t t = 0; t < pb.inventory.tensors.size(); ++t) {
    const auto [src, row0] = source(pb.inventory.tensors[t].name);
    copy_rows(a, src, b, static_cast<int>(t), row0);
  }
  auto self_a = make_self_communicator(*backend), self_b = make_self_communicator(*backend);
  MuonStep(a, *self_a).run(1);
  MuonStep(b, *self_b).run(1);
  int compared = 0;
  for (size_t t = 0; t < pb.inventory.tensors.size(); ++t) {
    const auto [src, row0] = source(pb.inventory.tensors[t].name);
    const LocalParam& pb_t = b.param(static_cast<int>(t));
    const LocalParam& pa_t = a.param(src);
    const std::vector<float> wa = read(a, pa_t.w + row0 * pa_t.entry_elems, pb_t.elems());
    const std::vector<float> wb = read(b, pb_t.w, pb_t.elems());
    CHECK(std::memcmp(wa.data(), wb.data(), wa.size() * sizeof(float)) == 0);
    ++compared;
  }
  CHECK(compared == static_cast<int>(pb.inventory.tensors.size()));
}

TEST_CASE("Nesterov, the update scale and weight decay follow docs/muon-step.md", "[step]") {
  ParamInventory inv;
  inv.tensors.push_back({"w", {48, 80}, UpdateRule::muon, {}, -1, 0, false, false});
  PlanOptions o;
  o.nesterov = true;
  o.hyper.weight_decay = 0.1;
  o.hyper.lr = 0.05;
  const Plan plan = one_rank_plan(inv, o);
  std::unique_ptr<Backend> backend = make_cpu_backend();
  RankState s(plan, *backend, 0);
  s.init_params();
  s.load_grads(1);
  const int64_t n = 48 * 80;
  const std::vector<float> w0 = read(s, s.param(0).w, n), g = read(s, s.param(0).g, n);
  auto self = make_self_communicator(*backend);
  MuonStep(s, *self).run(1);
  // By hand: M = mu * 0 + G; U = mu * M + G; O = NS(bf16(U)); W = W (1 - lr wd) - s O.
  const float mu = 0.95f;
  std::vector<bf16> u(n);
  for (int64_t i = 0; i < n; ++i) {
    const float m = mu * 0.0f + g[i];
    u[i] = to_bf16(mu * m + g[i]);
  }
  bf16* dev = static_cast<bf16*>(backend->alloc(n * sizeof(bf16)));
  backend->copy_to_device(dev, u.data(), n * sizeof(bf16));
  {
    NsWorkspace ws(*backend, 1, 48, 80);
    newton_schulz(*backend, plan.options.schedule, 1, 48, 80, dev, ws);
  }
  backend->copy_to_host(u.data(), dev, n * sizeof(bf16));
  backend->free(dev);
  const float scale = float(0.05 * 0.2 * std::sqrt(80.0));
  const float decay = float(1.0 - 0.05 * 0.1);
  const std::vector<float> w1 = read(s, s.param(0).w, n), m1 = read(s, s.param(0).m, n);
  int exact = 0;
  for (int64_t i = 0; i < n; ++i) {
    exact += w1[i] == w0[i] * decay - scale * to_float(u[i]);
    CHECK(m1[i] == g[i]);
  }
  CHECK(exact == n);
}

TEST_CASE("momentum folds mu M + G across steps", "[step]") {
  ParamInventory inv;
  inv.tensors.push_back({"w", {20, 36}, UpdateRule::muon, {}, -1, 0, false, false});
  const Plan plan = one_rank_plan(inv);
  std::unique_ptr<Backend> backend = make_cpu_backend();
  RankState s(plan, *backend, 0);
  s.init_params();
  auto self = make_self_communicator(*backend);
  MuonStep step(s, *self);
  s.load_grads(1);
  const std::vector<float> g1 = read(s, s.param(0).g, 720);
  step.run(1);
  s.load_grads(2);
  const std::vector<float> g2 = read(s, s.param(0).g, 720);
  step.run(2);
  const std::vector<float> m = read(s, s.param(0).m, 720);
  for (int i = 0; i < 720; ++i) CHECK(m[i] == 0.95f * g1[i] + g2[i]);
}
