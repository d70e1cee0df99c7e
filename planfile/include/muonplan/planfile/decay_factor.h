// The decoupled weight-decay factor each optimizer step multiplies W by, computed as the
// executor's kernels compute it. One definition for the kernels and for the plan check that
// refuses a negative factor: a check in double passed lr 0.007, weight decay 142.857142857
// (lr * wd just under 1) while AdamW's fp32 factor was -1.2e-7, flipping every weight's sign.
#pragma once

namespace muonplan {

// Muon (MuonStep::finish, the reference step): 1 - lr * wd in double, rounded to fp32 once.
inline float muon_decay_factor(double lr, double weight_decay) {
  return static_cast<float>(1.0 - lr * weight_decay);
}

// AdamW (formula::adamw_constants): in fp32, from lr and weight decay rounded to fp32.
inline float adamw_decay_factor(double lr, double weight_decay) {
  const float lr_f = static_cast<float>(lr), wd_f = static_cast<float>(weight_decay);
  const float product =
      lr_f * wd_f;  // rounded to fp32 before the subtraction, as the kernel has it
  return 1.0f - product;
}

}  // namespace muonplan
