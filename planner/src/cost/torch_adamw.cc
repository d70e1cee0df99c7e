// PyTorch's AdamW as a PyTorch trainer runs it (torch_adamw.h).
#include "cost/torch_adamw.h"

#include <string>

#include "muonplan/planner/workload.h"

namespace muonplan {

namespace {
constexpr const char* kFusedAdamwFrom = "2026-08-19";  // prime-rl #3305
}  // namespace

bool fused_adamw(const PlanOptions& o, const OffloadPolicy& pol) {
  if (!o.workload || o.workload->trainer.empty()) return false;
  const std::string& date = o.workload->prime_rl_date;
  return (date.empty() || date >= kFusedAdamwFrom) && pol.adamw_moments == Residence::gpu;
}

bool foreach_adamw(const PlanOptions& o, const OffloadPolicy& pol) {
  return o.runtime == RuntimeKind::pytorch && !fused_adamw(o, pol);
}

double adamw_step_bytes_per_elem(const PlanOptions& o, const OffloadPolicy& pol,
                                 const ElemBytes& eb) {
  const double master = eb.master, grad = eb.master;
  if (!foreach_adamw(o, pol)) return grad + 2 * (master + eb.adamw_state);
  const double moment = eb.adamw_state / 2;  // exp_avg and exp_avg_sq alike
  const double decay = o.hyper.adamw_weight_decay != 0 ? 2 * master : 0;
  return decay + 2 * master + 3 * moment + 11 * moment + 2 * grad;
}

}  // namespace muonplan
