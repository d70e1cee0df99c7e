// Plans the tests build again and again, written once: the bundled models and topologies, a
// plan at a fixed node count, the one-rank plans the loader and step tests start from, and the
// named terms of a prediction. Used by the planner's unit tests, the executor's infrastructure
// and step tests and the GPU tests (each target has tests/unit on its include path).
#pragma once
#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "muonplan/base/error.h"
#include "muonplan/planner/model_io.h"
#include "muonplan/planner/plan.h"
#include "muonplan/planner/plan_request.h"
#include "muonplan/planner/workload.h"
#include "test_paths.h"

namespace muonplan::test {

// models/NAME.yaml and topologies/NAME.yaml of this repository.
inline ModelSpec model(const std::string& name) {
  return load_model(repo_path("models/" + name + ".yaml"));
}
inline Topology topology(const std::string& name) {
  return load_topology(repo_path("topologies/" + name + ".yaml"));
}
inline Topology h200() {
  return topology("h200-ib");
}

// The planner's plan for `name` on `nodes` H200 nodes with offload `mode`: no search.
// One rank of tests/data/tiny-dense.yaml's kind of plan: AdamW under the pytorch runtime, a
// 4096-token step of 2048-token rows, full AC, an unfused head (the timeline tests' workload).
inline PlanOptions tiny_workload() {
  PlanOptions o;
  o.optimizer = OptimizerKind::adamw;
  o.gpus_per_node = 1;
  o.layout = {1, 1, 1};
  o.runtime = RuntimeKind::pytorch;
  o.workload = Workload{4096, 2048, 1, true, false, 0, CpStyle::ulysses};
  return o;
}

// One node of 8 GPUs under FSDP, AdamW, no offload; a step of one `seq_len`-token row per GPU
// (one micro step) with full AC, run by `trainer` ("" none, "rl", "sft"): the request of the
// trainer terms' tests.
inline PlanRequest one_node_rows(int64_t seq_len, const std::string& trainer = "") {
  PlanRequest r;
  r.options.nodes = 1;
  r.options.offload = OffloadMode::none;
  r.options.layout = Layout{8, 1, 1};
  r.options.optimizer = OptimizerKind::adamw;
  Workload w;
  w.tokens_per_step = 8 * seq_len;
  w.seq_len = seq_len;
  w.ac_full = true;
  w.trainer = trainer;
  r.options.workload = w;
  return r;
}

inline Plan plan_fixed(const std::string& name, int nodes, OffloadMode mode, PlanOptions o = {}) {
  PlanRequest r;
  r.options = std::move(o);
  r.options.nodes = nodes;
  r.options.offload = mode;
  return make_plan(model(name), h200(), r);
}

// The named term of a memory or time breakdown; a test failure when there is none.
inline const Term& term(const std::vector<Term>& terms, const std::string& name) {
  for (const Term& t : terms) {
    if (t.name == name) return t;
  }
  FAIL("no term " << name);
  static const Term none;
  return none;
}
inline bool has(const std::vector<Term>& terms, const std::string& name) {
  for (const Term& t : terms) {
    if (t.name == name) return true;
  }
  return false;
}

// The request for one node of one rank, no offload: what the planner writes for the smallest
// world, whose messages name rank 0 only.
inline PlanRequest one_rank() {
  PlanRequest r;
  r.options.nodes = 1;
  r.options.gpus_per_node = 1;
  r.options.offload = OffloadMode::none;
  return r;
}

// The plan file (plan_to_json) of models/tiny-dense.yaml on the CPU topology for `r`.
inline nlohmann::json tiny_plan(const PlanRequest& r = one_rank()) {
  return plan_to_json(make_plan(model("tiny-dense"), topology("cpu-ci"), r));
}

// plan_from_json's one-line message for `plan` edited by `edit`; "(accepted)" when it loads.
inline std::string plan_error_after(nlohmann::json plan,
                                    const std::function<void(nlohmann::json&)>& edit) {
  edit(plan);
  try {
    plan_from_json(plan, "plan.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}
// The same for the one-rank tiny-dense plan.
inline std::string plan_error_after(const std::function<void(nlohmann::json&)>& edit) {
  return plan_error_after(tiny_plan(), edit);
}

// The message with which the request `muonplan plan` (and muonplan.plan in Python) builds from
// these flags is refused; "(accepted)" when it is not.
inline std::string flags_error(const std::map<std::string, std::string>& flags) {
  return error_of([&] { to_plan_request(plan_flags_from_map(flags)); }, "(accepted)");
}

// A one-rank plan built without the planner's search or a topology, as the executor's step
// tests run it: `inv`'s matrices in chunks with every owner rank 0, layout 1 x 1 x 1.
inline Plan one_rank_plan(ParamInventory inv, PlanOptions o = {}) {
  Plan p;
  p.inventory = std::move(inv);
  p.world = 1;
  p.options = std::move(o);
  p.options.layout = Layout{1, 1, 1};
  p.chunks = build_chunks(p.inventory, false, p.options.layout, 1, OwnerStrategy::round_robin,
                          static_cast<int>(p.options.schedule.steps.size()));
  for (const ParamTensor& t : p.inventory.tensors)
    p.shards.push_back(shard_rule(t, p.options.layout, 1));
  p.batches_in_flight = p.options.batches_in_flight();
  return p;
}
// The same for models/FILE (a file name with its extension, e.g. "tiny-moe.yaml").
inline Plan one_rank_plan(const std::string& file, PlanOptions o = {}) {
  return one_rank_plan(build_inventory(load_model_yaml(repo_path("models/" + file))), std::move(o));
}

}  // namespace muonplan::test
