// PyTorch's AdamW as a PyTorch trainer runs it (cost/torch_adamw.h): which implementation, and
// the bytes per element of its step, worked by hand from torch's _multi_tensor_adam.
#include <catch2/catch.hpp>

#include "cost/torch_adamw.h"
#include "muonplan/planfile/offload_policy.h"
#include "muonplan/planner/workload.h"

using namespace muonplan;

TEST_CASE("torch's AdamW: foreach passes or one fused pass", "[torch_adamw]") {
  PlanOptions o;
  o.runtime = RuntimeKind::pytorch;
  o.workload = Workload{};
  const OffloadPolicy none = offload_policy(OffloadMode::none, OffloadStaging::none);
  const ElemBytes fp32;  // 4 B masters and gradients, 8 B of moments
  // foreach, decoupled decay: params 2 x 4 (decay) + 2 x 4 (addcdiv); exp_avg 3 x 4; exp_avg_sq
  // and its sqrt 11 x 4; the gradient read twice (lerp, addcmul): 80 B.
  o.hyper.adamw_weight_decay = 0.01;
  CHECK(foreach_adamw(o, none));
  CHECK(adamw_step_bytes_per_elem(o, none, fp32) == 80);
  o.hyper.adamw_weight_decay = 0;  // no decay pass
  CHECK(adamw_step_bytes_per_elem(o, none, fp32) == 72);
  // bf16 masters and state: half of each array.
  ElemBytes bf16;
  bf16.master = 2;
  bf16.adamw_state = 4;
  o.hyper.adamw_weight_decay = 0.01;
  CHECK(adamw_step_bytes_per_elem(o, none, bf16) == 40);
  // prime-rl from #3305 (2026-08-19; undated is today's) builds it fused with the moments on the
  // GPU: read g, read and write p, m, v.
  o.workload->trainer = "rl";
  CHECK(fused_adamw(o, none));
  CHECK(adamw_step_bytes_per_elem(o, none, fp32) == 28);
  o.workload->prime_rl_date = "2026-01-15";
  CHECK(adamw_step_bytes_per_elem(o, none, fp32) == 80);
  // Under optim_cpu_offload it keeps foreach at any date.
  o.workload->prime_rl_date = "";
  const OffloadPolicy staged = offload_policy(OffloadMode::optimizer, OffloadStaging::whole);
  CHECK_FALSE(fused_adamw(o, staged));
  CHECK(foreach_adamw(o, staged));
  // The muonplan executor's AdamW is one pass.
  o.runtime = RuntimeKind::muonplan;
  o.workload->prime_rl_date = "2026-01-15";
  CHECK_FALSE(foreach_adamw(o, none));
  CHECK(adamw_step_bytes_per_elem(o, none, fp32) == 28);
}
