#!/usr/bin/env bash
# Hyperparameters the kernels use in fp32 are checked in fp32 (issue 33 items 23, 24).
# Newton-Schulz coefficients are used in fp32, so they are checked there (item 24):
# 1e39 is finite in double and passed the plan, then was inf at execute. The plan refuses it,
# exit 2, naming the flag and the value; the largest fp32 value is accepted.
set -u
source "$(dirname "$0")/lib.sh"
msg="coefficients must be finite in fp32 (|c| at most 3.40282e+38)"
for c in '1e39,0,0' '0,-1e39,0' '3.5e38,0,0'; do
  expect "ns coefficients $c" 2 "--ns-schedule: $msg, got $("$py" -c "import sys; print('%g' % [float(x) for x in sys.argv[1].split(',') if float(x)][0])" "$c")" \
    "$bin" plan --model tiny-moe --topology topologies/cpu-ci.yaml --nodes 1 --ns-schedule "$c"
done
"$bin" plan --model tiny-moe --topology topologies/cpu-ci.yaml --nodes 1 \
  --ns-schedule '3.4e38,-4.7750,2.0315' >/dev/null 2>"$work/err" && ok \
  || bad "3.4e38 (finite in fp32) refused: $(head -c 300 "$work/err")"

# The AdamW decay factor 1 - lr * wd is computed in fp32 (decay_factor.h), so it is checked there
# (item 23): lr 0.007 with weight decay 142.8571428 is under 1 in double but -1.19e-07 in fp32,
# which would flip every AdamW weight's sign each step. Muon's factor (double, rounded once) is
# 4e-10 there, and the plan takes it; 142.857 keeps AdamW's at or above 0.
t=(--model tiny-moe --topology topologies/cpu-ci.yaml --nodes 1)
expect "adamw decay fp32" 2 "--adamw-weight-decay: each step multiplies W by 1 - lr * weight_decay, -1.19e-07 in fp32 as the kernel computes it (AdamW lr 0.007): it must be at least 0 (weight decay at most 142.857), got 142.8571428" \
  "$bin" plan "${t[@]}" --adamw-lr 0.007 --adamw-weight-decay 142.8571428
expect "adamw decay double" 2 "--adamw-weight-decay: must be at most 1/lr = 142.857 (AdamW lr 0.007): each step multiplies W by 1 - lr * weight_decay, got 142.857143" \
  "$bin" plan "${t[@]}" --adamw-lr 0.007 --adamw-weight-decay 142.857143
for ok_case in "--adamw-lr 0.007 --adamw-weight-decay 142.857" "--lr 0.007 --weight-decay 142.8571428"; do
  # shellcheck disable=SC2086
  "$bin" plan "${t[@]}" $ok_case >/dev/null 2>"$work/err" && ok \
    || bad "$ok_case refused: $(head -c 300 "$work/err")"
done
finish
