#include "muonplan/plan_file.h"

#include <utility>

namespace muonplan {

Plan on_one_rank(const Plan& plan) {
  Plan ref = plan;
  ref.world = 1;
  ref.options.nodes = 1;
  ref.options.gpus_per_node = ref.gpus_per_node = 1;
  ref.options.layout = Layout{1, 1, 1};
  for (ShardRule& r : ref.shards) {
    r.group_size = 1;
    r.ep = r.dp = 1;
  }
  ChunkPlan& cp = ref.chunks;
  cp.world = 1;
  cp.layout = ref.options.layout;
  cp.loads = {};
  // A rank orthogonalizes one matrix per batch: a batch of k matrices becomes k batches of one,
  // in the batch's order.
  std::vector<Chunk> chunks;
  for (const Chunk& c : cp.chunks) {
    if (c.kind != Chunk::Kind::muon_batch) {
      chunks.push_back(c);
      if (c.kind == Chunk::Kind::muon_local) chunks.back().local.ep = chunks.back().local.dp = 1;
      continue;
    }
    for (const MatrixRef& m : c.matrices) {
      Chunk one = c;
      one.matrices = {m};
      one.owners = {0};
      one.group_size = 1;
      one.padding = 0;
      one.params = m.rows * m.cols;
      one.param_names = {ref.inventory.tensors[m.tensor].name};
      chunks.push_back(std::move(one));
    }
  }
  cp.chunks = std::move(chunks);
  return ref;
}

}  // namespace muonplan
