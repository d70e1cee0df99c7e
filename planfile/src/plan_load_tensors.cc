// Reading a plan back, its tensors and chunks (plan_load.cc has the rest): which rank owns which
// matrix and which rows each rank holds, all checked, since the executor indexes with them.
#include <map>
#include <string>
#include <vector>

#include "muonplan/base/units.h"
#include "muonplan/planfile/plan_checks.h"
#include "plan_load_node.h"

namespace muonplan::plan_load {
namespace {

// Where the tensor's rows sit (shards.h): the rule the file states must be the one rule
// (shard_rule) for this tensor and layout, so every range the executor takes from it is inside
// the tensor and every rank agrees with its shard group.
ShardRule read_shard(const Node& n, const ParamTensor& t, const Plan& plan) {
  const ShardRule want = shard_rule(t, plan.options.layout, plan.world);
  ShardRule r;
  r.kind = n["kind"].named(kShardKindNames);
  if (r.kind != want.kind) {
    n["kind"].fail(std::string("expected ") + enum_name(kShardKindNames, want.kind) + " for '" +
                   t.name + "' under " + to_string(plan.options.layout));
  }
  auto same = [&](const char* key, int& field, int wanted, const char* what) {
    field = static_cast<int>(n[key].integer(1, kMaxWorldRanks));
    if (field != wanted) n[key].fail(std::string("expected ") + what + std::to_string(wanted));
  };
  switch (r.kind) {
    case ShardRule::Kind::row_sharded:
      n.only({"kind", "group_size"});
      same("group_size", r.group_size, want.group_size, "the layout's fsdp ");
      break;
    case ShardRule::Kind::stack_sharded:
      n.only({"kind", "ep", "dp"});
      same("ep", r.ep, want.ep, "the layout's ep ");
      same("dp", r.dp, want.dp, "the layout's fsdp / ep = ");
      break;
    case ShardRule::Kind::replicated:
      n.only({"kind"});
      break;
  }
  return r;
}

// A muon plan updates its matrices by Muon: one whose every tensor is AdamW runs AdamW while
// its metrics and report say Muon (an AdamW plan edited to say muon).
void check_optimizer_has_muon_tensor(const Node& root, const Plan& plan) {
  if (plan.options.optimizer != OptimizerKind::muon) return;
  for (const ParamTensor& t : plan.inventory.tensors) {
    if (t.rule == UpdateRule::muon) return;
  }
  root["optimizer"].fail(
      "expected adamw: no tensor has rule muon, so the step would run AdamW on every tensor, "
      "got muon");
}

}  // namespace

void read_inventory(const Node& root, Plan& plan) {
  plan.inventory.model_name = plan.model_name;
  const Node tensors = root["tensors"];
  std::map<std::string, int> seen;
  double params = 0;  // in doubles: element counts of unchecked shapes can overflow int64
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Node n = tensors[i];
    n.only({"name", "shape", "rule", "partitions", "stack_dim", "shard"});
    ParamTensor t;
    t.name = n["name"].string();
    if (t.name.empty()) n["name"].fail("must not be empty");
    if (!seen.emplace(t.name, int(i)).second) n["name"].fail("duplicate tensor '" + t.name + "'");
    const Node shape = n["shape"];
    if (shape.size() < 1 || shape.size() > 3) shape.fail("expected 1 to 3 dimensions");
    // Bounded as the model loaders bound every tensor (model_limits.h): the executor allocates
    // these shapes, and [1000, 10^9] would be a std::bad_alloc rather than a refusal.
    for (size_t d = 0; d < shape.size(); ++d) t.shape.push_back(shape[d].integer(1, kMaxTensorDim));
    double numel = 1;
    for (int64_t d : t.shape) numel *= double(d);
    params += numel;
    if (params > kMaxParams) {
      shape.fail(json_brief(shape.raw()) +
                 " brings the model past 1e15 parameters, more than muonplan plans for");
    }
    t.rule = n["rule"].named(kUpdateRuleNames);
    // The optimizer field and the rules must say the same: the step runs the rules, so a Muon
    // plan edited to say adamw would still run Muon (planned_inventory, search.cc, writes
    // adamw on every tensor of a plan whose optimizer is not muon).
    if (t.rule == UpdateRule::muon && plan.options.optimizer != OptimizerKind::muon) {
      n["rule"].fail(std::string("expected adamw: only a muon plan updates tensors by Muon, and "
                                 "this plan's optimizer is ") +
                     enum_name(kOptimizerNames, plan.options.optimizer) + ", got muon");
    }
    t.stack_dim = n["stack_dim"].integer(-1, 0);
    if (t.stack_dim == 0 && t.shape.size() != 3)
      n["stack_dim"].fail("a stack ([E, out, in]) needs 3 dimensions");
    if (t.rule == UpdateRule::muon && t.shape.size() != 2 + (t.stack_dim == 0 ? 1 : 0))
      n["rule"].fail("muon needs a matrix or a stack of matrices");
    const Node parts = n["partitions"];
    const std::string parts_rule = "partition rows must add up to the matrix rows";
    if (parts.size() > 0 && t.shape.size() < 2) parts.fail(parts_rule);
    int64_t rows = 0;
    for (size_t p = 0; p < parts.size(); ++p) {
      parts[p].only({"name", "rows"});
      t.partitions.push_back({parts[p]["name"].string(), parts[p]["rows"].integer(1, INT64_MAX)});
      // Checked before adding: a sum past the matrix rows could overflow int64.
      if (t.partitions.back().rows > t.rows() - rows) parts.fail(parts_rule);
      rows += t.partitions.back().rows;
    }
    if (!t.partitions.empty() && rows != t.rows()) parts.fail(parts_rule);
    t.routed_expert = t.stack_dim == 0;
    plan.shards.push_back(read_shard(n["shard"], t, plan));
    plan.inventory.tensors.push_back(std::move(t));
  }
  // A plan that trains nothing (LoRA targets that matched no module) ran and saved an empty
  // checkpoint; the planner refuses to make one (lora.cc), and execute to run one.
  if (plan.inventory.tensors.empty())
    tensors.fail(root.has("lora") ? "empty: the plan's LoRA adapts nothing (no module matches "
                                    "lora.target_modules); plan it again with targets that match"
                                  : "empty: the plan trains nothing");
  check_optimizer_has_muon_tensor(root, plan);
}

namespace {

// Coverage of each tensor's Muon partitions (or the tensor, for AdamW) by the chunks.
using Coverage = std::vector<std::vector<int>>;

int tensor_index(const Node& n, const Plan& plan) {
  const std::string name = n.string();
  for (size_t i = 0; i < plan.inventory.tensors.size(); ++i) {
    if (plan.inventory.tensors[i].name == name) return static_cast<int>(i);
  }
  n.fail("unknown tensor '" + name + "'");
}

// A chunk's matrix: tensor, partition, row_offset; the partition must have the chunk's shape.
MatrixRef read_matrix(const Node& n, const Plan& plan, const Chunk& c, Coverage& covered) {
  n.only({"tensor", "partition", "row_offset"});
  MatrixRef m;
  m.tensor = tensor_index(n["tensor"], plan);
  const ParamTensor& t = plan.inventory.tensors[m.tensor];
  if (t.rule != UpdateRule::muon) n["tensor"].fail("'" + t.name + "' is not a Muon tensor");
  const std::vector<Partition> parts = t.muon_partitions();
  m.partition = n["partition"].integer(0, int64_t(parts.size()) - 1);
  for (int p = 0; p < m.partition; ++p) m.row_offset += parts[p].rows;
  if (n["row_offset"].integer(0, INT64_MAX) != m.row_offset)
    n["row_offset"].fail("expected " + std::to_string(m.row_offset) + " for this partition");
  m.rows = parts[m.partition].rows;
  m.cols = t.cols();
  if (m.rows != c.rows || m.cols != c.cols) {
    n.fail("a " + std::to_string(m.rows) + " x " + std::to_string(m.cols) +
           " matrix in a chunk of " + std::to_string(c.rows) + " x " + std::to_string(c.cols));
  }
  ++covered[m.tensor][m.partition];
  return m;
}

// A muon_batch's shard group, matrices (row-sharded ones) and owners, into `c`.
void read_batch(const Node& n, const Plan& plan, Chunk& c, Coverage& covered) {
  const Layout& layout = plan.options.layout;
  const Node matrices = n["matrices"];
  n["shard_group"].only({"size", "dim"});
  c.group_size = n["shard_group"]["size"].integer(1);
  if (c.group_size != layout.fsdp)
    n["shard_group"]["size"].fail("expected the fsdp size " + std::to_string(layout.fsdp));
  if (matrices.size() == 0) matrices.fail("a batch needs at least one matrix");
  for (size_t k = 0; k < matrices.size(); ++k) {
    c.matrices.push_back(read_matrix(matrices[k], plan, c, covered));
    const int ti = c.matrices.back().tensor;
    if (plan.shards[ti].kind != ShardRule::Kind::row_sharded) {
      matrices[k]["tensor"].fail("'" + plan.inventory.tensors[ti].name +
                                 "' is not row_sharded (tensors[].shard)");
    }
  }
  c.padding = n["padding"].integer(0, c.group_size);
  const Node owners = n["owners"];
  if (owners.size() != c.matrices.size() + c.padding)
    owners.fail("expected one owner per matrix and padding matrix");
  // The step gives each rank of the group at most one matrix of a batch to orthogonalize.
  std::vector<char> taken(static_cast<size_t>(c.group_size), 0);
  for (size_t k = 0; k < owners.size(); ++k) {
    c.owners.push_back(static_cast<int>(owners[k].integer(0, c.group_size - 1)));
    if (taken[c.owners.back()]++) {
      owners[k].fail("group position " + std::to_string(c.owners.back()) +
                     " owns two matrices of this batch (a rank orthogonalizes one per batch)");
    }
  }
}

// A muon_local chunk's one matrix entry and the rule of which ranks hold its matrices, into `c`.
void read_local(const Node& n, const Plan& plan, Chunk& c, Coverage& covered) {
  const Layout& layout = plan.options.layout;
  const Node matrices = n["matrices"];
  if (matrices.size() != 1) matrices.fail("a local chunk has exactly one matrix entry");
  c.matrices.push_back(read_matrix(matrices[0], plan, c, covered));
  const ParamTensor& t = plan.inventory.tensors[c.matrices[0].tensor];
  if (plan.shards[c.matrices[0].tensor].kind == ShardRule::Kind::row_sharded)
    matrices[0]["tensor"].fail("'" + t.name + "' is row_sharded: it belongs in a muon_batch");
  // Which ranks hold how many of its matrices: the rule the file states (chunks.h,
  // LocalCounts), checked against the tensor and the layout it must describe.
  const Node local = n["local"];
  const std::string rule = local["rule"].string();
  if (rule != "replicated" && rule != "stack") {
    local["rule"].fail("expected replicated or stack, got '" + rule + "'");
  }
  c.local.stacked = rule == "stack";
  if (c.local.stacked != (t.stack_dim == 0)) {
    local["rule"].fail(std::string("expected ") + (t.stack_dim == 0 ? "stack" : "replicated") +
                       " for '" + t.name + "'");
  }
  if (c.local.stacked) {
    local.only({"rule", "entries", "ep", "dp"});
    c.local.entries = local["entries"].integer(0, INT64_MAX);
    c.local.ep = local["ep"].integer(1, kMaxWorldRanks);
    c.local.dp = local["dp"].integer(1, kMaxWorldRanks);
    if (c.local.entries != t.stack_count())
      local["entries"].fail("expected the stack's " + std::to_string(t.stack_count()));
    if (c.local.ep != layout.ep)
      local["ep"].fail("expected the layout's ep " + std::to_string(layout.ep));
    if (int64_t(c.local.ep) * c.local.dp != layout.fsdp)
      local["dp"].fail("expected the layout's fsdp / ep = " +
                       std::to_string(layout.fsdp / layout.ep));
  } else {
    local.only({"rule"});
  }
  const int64_t most = c.local.max();
  if (n["count"].integer(0, INT64_MAX) != most)
    n["count"].fail("expected " + std::to_string(most) + " matrices on the busiest rank");
}

Chunk read_chunk(const Node& n, const Plan& plan, Coverage& covered) {
  n.only({"kind", "rows", "cols", "params", "count", "shard_group", "owners", "padding", "matrices",
          "local", "predicted_ns_ms", "param_names"});
  Chunk c;
  c.kind = n["kind"].named(kChunkKindNames);
  c.rows = n["rows"].integer(0, INT64_MAX);
  c.cols = n["cols"].integer(0, INT64_MAX);
  c.params = n["params"].integer(0, INT64_MAX);
  if (n.has("predicted_ns_ms")) c.predicted_ns_s = n["predicted_ns_ms"].number(0) / 1e3;
  const Node names = n["param_names"];
  for (size_t i = 0; i < names.size(); ++i) {
    tensor_index(names[i], plan);
    c.param_names.push_back(names[i].string());
  }
  if (c.kind == Chunk::Kind::muon_batch) {
    read_batch(n, plan, c, covered);
  } else if (c.kind == Chunk::Kind::muon_local) {
    read_local(n, plan, c, covered);
  } else {
    for (size_t i = 0; i < names.size(); ++i) {
      const int ti = tensor_index(names[i], plan);
      if (plan.inventory.tensors[ti].rule != UpdateRule::adamw)
        names[i].fail("'" + names[i].string() + "' is not an AdamW tensor");
      ++covered[ti][0];
    }
  }
  return c;
}

}  // namespace

void read_chunks(const Node& root, Plan& plan) {
  ChunkPlan& cp = plan.chunks;
  cp.owners = plan.options.owners;
  cp.world = plan.world;
  cp.layout = plan.options.layout;
  Coverage covered;
  for (const ParamTensor& t : plan.inventory.tensors) {
    covered.emplace_back(t.rule == UpdateRule::muon ? t.muon_partitions().size() : 1, 0);
  }
  const Node chunks = root["chunks"];
  for (size_t i = 0; i < chunks.size(); ++i)
    cp.chunks.push_back(read_chunk(chunks[i], plan, covered));
  for (size_t ti = 0; ti < covered.size(); ++ti) {
    for (size_t p = 0; p < covered[ti].size(); ++p) {
      if (covered[ti][p] == 1) continue;
      const ParamTensor& t = plan.inventory.tensors[ti];
      chunks.fail("tensor '" + t.name + "'" +
                  (covered[ti].size() > 1 ? " partition " + std::to_string(p) : "") + " is in " +
                  std::to_string(covered[ti][p]) + " chunks, expected 1");
    }
  }
}

}  // namespace muonplan::plan_load
