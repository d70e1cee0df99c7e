// One candidate's context (candidate_context.h): each rule it is built by, stated once.
#include "cost/candidate_context.h"

#include <algorithm>

#include "cost/gpu_persistent.h"
#include "muonplan/base/units.h"
#include "muonplan/planfile/step_buffers.h"

namespace muonplan {

int gpus_per_node(const PlanOptions& o, const Topology& topo) {
  return o.gpus_per_node > 0 ? o.gpus_per_node : topo.node.gpus;
}

double gpu_limit_bytes(const PlanOptions& o, const Topology& topo) {
  return (o.gpu_memory_gib > 0 ? o.gpu_memory_gib : topo.node.gpu.memory_gib) * kGiB;
}

double host_limit_bytes(const PlanOptions& o, const Topology& topo) {
  return (o.host_ram_gib > 0 ? o.host_ram_gib : topo.node.host_ram_gib) * kGiB;
}

double top_k(const ModelSpec& s) {
  return double(std::max<int64_t>(1, s.moe.experts_per_token));
}

double vocab_block(const ModelSpec& s) {
  return std::min(double(s.vocab_size), kFusedLmHeadVocabBlock);
}

ElemBytes elem_bytes_of(const PlanOptions& o) {
  ElemBytes b;
  b.master = double(o.master_bytes());
  b.muon_state = muon_state_bytes(o);
  b.adamw_state = o.optimizer == OptimizerKind::signsgd ? 0 : adamw_state_bytes(o);
  b.host_fold = 2 * b.muon_state;
  b.host_update = 2 * (b.master + b.adamw_state) + double(elem_bytes::kComputeCopy);
  return b;
}

CandidateContext candidate_context(const ModelSpec& s, const Topology& topo, const PlanOptions& o,
                                   int world) {
  CandidateContext c{topo, o};
  c.world = world;
  c.gpus_per_node = gpus_per_node(o, topo);
  c.gpu_limit_bytes = gpu_limit_bytes(o, topo);
  c.host_limit_bytes = host_limit_bytes(o, topo);
  c.rates = step_cost::rates(topo, o, c.gpus_per_node);
  c.top_k = top_k(s);
  c.vocab_block = vocab_block(s);
  c.bytes = elem_bytes_of(o);
  return c;
}

}  // namespace muonplan
