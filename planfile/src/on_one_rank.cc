#include "muonplan/planfile/plan_file.h"

#include <utility>

namespace muonplan {

Plan on_one_rank(const Plan& plan) {
  Plan ref = plan;
  ref.world = 1;
  ref.options.nodes = 1;
  ref.options.gpus_per_node = ref.gpus_per_node = 1;
  ref.options.layout = Layout{1, 1, 1};
  // Every tensor whole on the one rank, as the planner states it for fsdp=1: replicated, or a
  // stack over ep = dp = 1.
  for (ShardRule& r : ref.shards) {
    if (r.kind == ShardRule::Kind::row_sharded) r = ShardRule{ShardRule::Kind::replicated};
    r.ep = r.dp = 1;
  }
  ChunkPlan& cp = ref.chunks;
  cp.world = 1;
  cp.layout = ref.options.layout;
  cp.loads = {};
  // A batch's matrices become local work, one chunk each in the batch's order, as fsdp=1 plans
  // them: no exchange with itself, and NS on each whole matrix.
  std::vector<Chunk> chunks;
  for (const Chunk& c : cp.chunks) {
    if (c.kind != Chunk::Kind::muon_batch) {
      chunks.push_back(c);
      if (c.kind == Chunk::Kind::muon_local) chunks.back().local.ep = chunks.back().local.dp = 1;
      continue;
    }
    for (const MatrixRef& m : c.matrices) {
      Chunk one;
      one.kind = Chunk::Kind::muon_local;
      one.rows = m.rows;
      one.cols = m.cols;
      one.matrices = {m};
      one.params = m.rows * m.cols;
      one.param_names = {ref.inventory.tensors[m.tensor].name};
      one.predicted_ns_s = c.predicted_ns_s;
      chunks.push_back(std::move(one));
    }
  }
  cp.chunks = std::move(chunks);
  return ref;
}

}  // namespace muonplan
