// Reading a plan back: the inverse of plan_to_json for what the executor runs. The executor
// trusts the chunks it loads (which rank owns which matrix, which rows each rank holds), so
// everything it would index with is checked here and reported as "FILE: field: message".
#include <cmath>
#include <map>

#include "muonplan/base/error.h"
#include "muonplan/base/io.h"
#include "muonplan/plan_checks.h"
#include "muonplan/plan_file.h"
#include "muonplan/base/units.h"

namespace muonplan {
namespace {

using json = nlohmann::json;

// A value in the plan with the dotted path that names it in errors ("chunks[3].owners[1]").
class Node {
 public:
  Node(const std::string& path, const json& value, std::string field)
      : path_(path), v_(value), field_(std::move(field)) {}

  [[noreturn]] void fail(const std::string& message) const {
    throw InputError({path_, 0, 0}, field_, message);
  }
  const std::string& field() const { return field_; }
  const std::string& path() const { return path_; }
  const json& raw() const { return v_; }

  bool has(const std::string& key) const { return v_.is_object() && v_.contains(key); }
  // Refuses keys plan_to_json does not write: a misspelt key would otherwise be ignored.
  void only(std::initializer_list<const char*> known) const {
    if (!v_.is_object()) fail("expected an object, got " + json_brief(v_));
    for (const auto& item : v_.items()) {
      bool ok = false;
      for (const char* k : known) ok = ok || item.key() == k;
      if (!ok) (*this)[item.key()].fail("unknown key (muonplan plan does not write it)");
    }
  }
  Node operator[](const std::string& key) const {
    if (!v_.is_object()) fail("expected an object, got " + json_brief(v_));
    const std::string field = field_.empty() ? key : field_ + "." + key;
    const auto it = v_.find(key);
    if (it == v_.end()) Node(path_, v_, field).fail("missing");
    return Node(path_, *it, field);
  }
  Node operator[](size_t i) const {
    return Node(path_, v_.at(i), field_ + "[" + std::to_string(i) + "]");
  }
  size_t size() const {
    if (!v_.is_array()) fail("expected an array, got " + json_brief(v_));
    return v_.size();
  }

  int64_t integer(int64_t lo, int64_t hi = INT32_MAX) const {
    if (!v_.is_number_integer()) fail("expected an integer, got " + json_brief(v_));
    // Past INT64_MAX nlohmann holds an unsigned, which get<int64_t> would turn negative.
    if (v_.is_number_unsigned() && v_.get<uint64_t>() > uint64_t(INT64_MAX))
      fail("expected an integer below 2^63, got " + json_brief(v_));
    const int64_t x = v_.get<int64_t>();
    if (x < lo || x > hi) {
      const std::string range = hi >= INT32_MAX
                                    ? ">= " + std::to_string(lo)
                                    : "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
      fail("expected an integer " + range + ", got " + std::to_string(x));
    }
    return x;
  }
  // lo_open: the value must exceed lo (a positive rate), not merely reach it.
  double number(double lo = -HUGE_VAL, bool lo_open = false, double hi = HUGE_VAL) const {
    if (!v_.is_number()) fail("expected a number, got " + json_brief(v_));
    const double x = v_.get<double>();
    if (!std::isfinite(x) || x < lo || (lo_open && x == lo) || x > hi) {
      fail("out of range: " + json_brief(v_));
    }
    return x;
  }
  bool boolean() const {
    if (!v_.is_boolean()) fail("expected true or false, got " + json_brief(v_));
    return v_.get<bool>();
  }
  std::string string() const {
    if (!v_.is_string()) fail("expected a string, got " + json_brief(v_));
    return v_.get<std::string>();
  }
  // The enum value the string names, from the enum's name table (enum_names.h).
  template <class E, size_t N>
  E named(const EnumName<E> (&table)[N]) const {
    const std::string s = string();
    if (const std::optional<E> v = enum_from_name(table, s)) return *v;
    fail("expected " + choices_text(enum_names(table)) + ", got '" + s + "'");
  }

 private:
  const std::string& path_;
  const json& v_;
  std::string field_;
};

// Nodes, GPUs per node, the world they make and the layout over it.
void read_world_and_layout(const Node& root, Plan& plan) {
  PlanOptions& o = plan.options;
  o.nodes = root["nodes"].integer(1);
  o.gpus_per_node = plan.gpus_per_node = root["gpus_per_node"].integer(1);
  // Per-rank tables (local matrices, loads) are sized by the world: bound it first.
  plan.world = root["world_size"].integer(1, kMaxWorldRanks);
  if (int64_t(o.nodes) * o.gpus_per_node != plan.world) {
    root["world_size"].fail(
        "expected nodes x gpus_per_node = " + std::to_string(int64_t(o.nodes) * o.gpus_per_node) +
        ", got " + std::to_string(plan.world));
  }
  const Node layout = root["layout"];
  layout.only({"fsdp", "cp", "ep"});
  o.layout.fsdp = layout["fsdp"].integer(1);
  o.layout.cp = layout["cp"].integer(1);
  o.layout.ep = layout["ep"].integer(1);
  const std::string w = "world_size " + std::to_string(plan.world);
  if (plan.world % o.layout.fsdp != 0) layout["fsdp"].fail("does not divide " + w);
  if (o.layout.fsdp % o.layout.cp != 0) layout["cp"].fail("does not divide fsdp");
  if (plan.world % o.layout.ep != 0) layout["ep"].fail("does not divide " + w);
}

// The learning rates, momentum, decays and AdamW's constants, as written; ranged later.
void read_hyper(const Node& c, OptimizerHyper& h) {
  // Ranges: check_optimizer_config (read_options), as `muonplan plan` checks its flags.
  // plan_to_json writes the resolved values; a zero update_rms or adamw lr would mean "use the
  // default" on the way back out, so the plan must say what it runs (> 0).
  h.lr = c["lr"].number();
  h.momentum = c["momentum"].number();
  h.weight_decay = c["weight_decay"].number();
  h.update_rms = c["update_rms"].number();
  const Node a = c["adamw"];
  a.only({"lr", "beta1", "beta2", "eps", "weight_decay"});
  h.adamw_lr = a["lr"].number();
  h.adamw_beta1 = a["beta1"].number();
  h.adamw_beta2 = a["beta2"].number();
  h.adamw_eps = a["eps"].number();
  h.adamw_weight_decay = a["weight_decay"].number();
}

// The Newton-Schulz schedule: its label and the coefficients that run.
NsSchedule read_ns_schedule(const Node& c) {
  // The coefficients are what runs; the name is a label (a preset's name also brings its
  // recommended update RMS, which only matters when update_rms is resolved again).
  NsSchedule s{c["ns_schedule"].string(), {}, 1.0, 0.2};
  for (const std::string& preset : ns_schedule_presets()) {
    if (preset == s.name) s.update_rms = ns_schedule(preset).update_rms;
  }
  const Node coeffs = c["newton_schulz_coefficients"];
  if (coeffs.size() == 0 || coeffs.size() > kMaxNsSteps)
    coeffs.fail(ns_steps_message(coeffs.size()));
  for (size_t i = 0; i < coeffs.size(); ++i) {
    const Node step = coeffs[i];
    if (step.size() != 3) step.fail("expected [a, b, c], got " + json_brief(step.raw()));
    s.steps.push_back({step[0].number(), step[1].number(), step[2].number()});
  }
  s.norm_scale = c["ns_norm_scale"].number();
  return s;
}

void read_options(const Node& root, Plan& plan) {
  PlanOptions& o = plan.options;
  read_world_and_layout(root, plan);
  o.offload = root["offload"].named(kOffloadModeNames);
  o.optimizer = root["optimizer"].named(kOptimizerNames);
  o.owners = root["owners"].named(kOwnerStrategyNames);

  const Node c = root["optimizer_config"];
  c.only({"bf16_momentum", "nesterov", "lr", "momentum", "weight_decay", "update_rms", "adamw",
          "ns_schedule", "newton_schulz_coefficients", "ns_norm_scale", "batches_in_flight",
          "optimizer_offload_staging", "optimizer_offload_pinned"});
  o.bf16_momentum = c["bf16_momentum"].boolean();
  o.nesterov = c["nesterov"].boolean();
  check_nesterov(o, c["nesterov"].field(), {root.path(), 0, 0});
  OptimizerHyper& h = o.hyper;
  read_hyper(c, h);
  o.schedule = read_ns_schedule(c);
  check_optimizer_config(h, o.schedule, root.path());

  o.optimizer_staging = c["optimizer_offload_staging"].named(kOffloadStagingNames);
  // One source: the offload policy's number for this mode and staging, which the cost model
  // predicted with; the file states it for its readers and may not differ.
  const Node flights = c["batches_in_flight"];
  plan.batches_in_flight = static_cast<int>(flights.integer(1, kMaxBatchesInFlight));
  if (plan.batches_in_flight != o.batches_in_flight()) {
    flights.fail(
        "expected " + std::to_string(o.batches_in_flight()) + ", the offload policy's for " +
        to_string(o.offload) + " with " + enum_name(kOffloadStagingNames, o.optimizer_staging) +
        " staging (the prediction assumed it), got " + std::to_string(plan.batches_in_flight));
  }
  // Where `optimizer` offload keeps the state: what the planner's PCIe rates assumed, so the
  // executor allocates it so (pageable when the file predates the key).
  if (c.has("optimizer_offload_pinned")) {
    o.pinned_host_state = c["optimizer_offload_pinned"].boolean();
  }
}

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
      same("dp", r.dp, want.dp, "world_size / ep = ");
      break;
    case ShardRule::Kind::replicated:
      n.only({"kind"});
      break;
  }
  return r;
}

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
}

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
    if (int64_t(c.local.ep) * c.local.dp != plan.world)
      local["dp"].fail("expected world_size / ep = " + std::to_string(plan.world / layout.ep));
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

// What the planner decided and why: not needed to run, read when present.
void read_decision(const Node& root, Plan& plan) {
  if (root.has("model")) plan.model_name = root["model"].string();
  if (root.has("topology")) plan.topology_name = root["topology"].string();
  // The model's and topology's own rule (name_problem), where plan writes the names.
  for (const char* key : {"model", "topology"}) {
    if (!root.has(key)) continue;
    const std::string why = name_problem(root[key].string());
    if (!why.empty()) root[key].fail(why);
  }
  if (root.has("fits")) plan.fits = root["fits"].boolean();
  if (root.has("limits")) {
    const Node l = root["limits"];
    l.only({"gpu_memory_gib", "host_ram_per_node_gib"});
    plan.predicted.gpu_limit_bytes = l["gpu_memory_gib"].number(0) * kGiB;
    plan.predicted.host_limit_bytes = l["host_ram_per_node_gib"].number(0) * kGiB;
  }
  if (root.has("runtime")) {  // plans before the runtime profile: muonplan's, no headroom
    const Node r = root["runtime"];
    r.only({"name", "gpu_headroom", "host_headroom"});
    plan.options.runtime = r["name"].named(kRuntimeNames);
    plan.predicted.gpu_headroom = plan.options.gpu_headroom = r["gpu_headroom"].number(0);
    plan.predicted.host_headroom = plan.options.host_headroom = r["host_headroom"].number(0);
  }
  if (!root.has("decision")) return;
  const Node d = root["decision"];
  d.only({"candidates", "reason"});
  plan.reason = d["reason"].string();
  const Node cands = d["candidates"];
  for (size_t i = 0; i < cands.size(); ++i) {
    const Node n = cands[i];
    n.only({"nodes", "offload", "fits", "layout", "gpu_peak_gib", "host_ram_per_node_gib", "step_s",
            "gpu_seconds", "note", "fit_margin"});
    Candidate c;
    c.nodes = n["nodes"].integer(1);
    c.offload = n["offload"].named(kOffloadModeNames);
    c.fits = n["fits"].boolean();
    if (n.has("layout")) c.layout = n["layout"].string();
    c.evaluated = n.has("gpu_peak_gib");
    if (c.evaluated) {
      c.gpu_peak_gib = n["gpu_peak_gib"].number();
      c.host_ram_per_node_gib = n["host_ram_per_node_gib"].number();
      c.step_s = n["step_s"].number();
      c.gpu_seconds = n["gpu_seconds"].number();
      if (n.has("fit_margin")) c.fit_margin = n["fit_margin"].number();
    } else {
      c.note = n["note"].string();
    }
    plan.candidates.push_back(c);
  }
}

}  // namespace

Plan plan_from_json(const json& j, const std::string& path) {
  const Node root(path, j, "");
  const auto schema = j.is_object() ? j.find("schema") : j.end();
  if (!j.is_object() || schema == j.end() || *schema != kPlanSchema) {
    const std::string got = !j.is_object() || schema == j.end() ? ""
                            : schema->is_string()               ? schema->get<std::string>()
                                                                : schema->dump();
    const std::string older = got == "muonplan.plan/1"
                                  ? " (written by an older muonplan: plan again, or upgrade it "
                                    "with scripts/upgrade-plan-v1.py)"
                                  : "";
    throw InputError({path, 0, 0}, "schema",
                     std::string("expected ") + kPlanSchema + ", got '" + got + "'" + older);
  }
  root.only({"schema",      "model",    "topology",         "nodes",     "gpus_per_node",
             "world_size",  "layout",   "offload",          "optimizer", "owners",
             "include_mtp", "workload", "optimizer_config", "fits",      "limits",
             "predicted",   "chunks",   "tensors",          "decision",  "runtime"});
  if (root.has("workload") && !root["workload"].raw().is_null()) {
    root["workload"].only({"tokens_per_step", "seq_len", "micro_batch_seqs", "ac", "ac_offload",
                           "lm_head_chunk", "cp_style"});
  }
  read_plan_predicted(j, path);  // execute reads it again for the metrics
  Plan plan;
  read_decision(root, plan);
  read_options(root, plan);
  read_inventory(root, plan);
  read_chunks(root, plan);
  return plan;
}

Plan load_plan(const std::string& path) {
  const json j = read_json_file(path);
  return plan_from_json(j, path);
}

}  // namespace muonplan
