// The attention kernel's published throughput per GPU generation (roofline.h; docs/planner.md,
// "Attention kernels"), and the kernel prime-rl's `auto` picks.
#include <cstdio>

#include "cost/roofline.h"
#include "muonplan/base/error.h"
#include "muonplan/planner/workload.h"

namespace muonplan {

AttentionKernel resolved_attention_kernel(AttentionKernel kernel, double cc) {
  if (kernel != AttentionKernel::auto_kernel) return kernel;
  return cc >= 9 && cc < 10 ? AttentionKernel::fa3 : AttentionKernel::fa2;
}

AttentionRate attention_rate(AttentionKernel kernel, double cc) {
  const bool hopper = cc >= 9 && cc < 10, blackwell = cc >= 10;
  if (kernel == AttentionKernel::fa3 && cc > 0 && !hopper) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "FlashAttention-3 runs on SM90 (Hopper) only; this GPU's compute capability "
                  "is %.1f (use fa2, sdpa or auto)",
                  cc);
    throw InputError({}, "--attention", buf);
  }
  kernel = resolved_attention_kernel(kernel, cc);
  if (kernel == AttentionKernel::fa3) {
    return {"FlashAttention-3", AttentionKernel::fa3, 616 / 989.4, 561 / 989.4,
            "FA3 paper (arXiv 2407.08608) figs. 5-6: H100 SXM5 bf16, head dim 128, causal, 16k: "
            "616 TFLOP/s forward, 561 backward, of 989.4"};
  }
  const char* name =
      kernel == AttentionKernel::sdpa ? "SDPA (FlashAttention-2 backend)" : "FlashAttention-2";
  if (hopper) {
    return {name, kernel, 335 / 989.4, 322 / 989.4,
            "FA3 paper figs. 5-6, its FA2 bars: H100 SXM5, head dim 128, causal, 16k: 335 "
            "forward, 322 backward"};
  }
  if (blackwell) {
    // FA2's mma.sync path has no published SM100 figure: Hopper's FA2 rate per SM at the same
    // clock, over B200's 148 SMs and 2250 TFLOP/s dense peak (an estimate, not a measurement).
    return {name, kernel, 335.0 * 148 / 132 / 2250, 322.0 * 148 / 132 / 2250,
            "estimate: H100's FA2 rate per SM x 148 SMs, of 2250 (no published SM100 figure)"};
  }
  return {name, kernel, 0.70, 0.55,
          "FA2 paper (arXiv 2307.08691): 50-73% of A100 peak; forward at 0.70, backward 0.55"};
}

double attention_efficiency(const Calibration& cal, AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::fa3:
      return cal.attention_fa3_efficiency;
    case AttentionKernel::sdpa:
      return cal.attention_sdpa_efficiency;
    default:
      return cal.attention_fa2_efficiency;
  }
}

}  // namespace muonplan
