#!/usr/bin/env bash
# Non-finite state never passes silently (issue "never destroy a user's files", item 5): a
# Newton-Schulz schedule that overflows (1e30 coefficients: finite in fp32, which the plan checks,
# and past bf16's range after two iterations) and a learning rate that overflows float once
# it scales the update (1e38: finite in fp32, as the plan checks it) make every rank stop with
# exit 1 naming the tensor and the step, instead of exiting 0 with NaN/Inf weights (and a reference_rel_error of 0: NaN compared with NaN). The
# check costs one reduction per chunk; its time is in the metrics (nonfinite_check_s).
source "$(dirname "$0")/lib.sh"
W=2
for case in "--ns-schedule 1e30,1e30,1e30" "--lr 1e38"; do
  plan "$work/p.json" tiny-moe $W $case || { bad "plan $case"; continue; }
  if run $W "$work/p.json" --steps 2 --check-reference >/dev/null; then
    bad "$case: accepted"
  else
    n="$(grep -c "error: non-finite update in model\.[a-z0-9_.]* at step 1; the parameters hold it" "$work/err")"
    [ "$n" -ge 1 ] && ok || bad "$case: message: $(cat "$work/err")"
    grep -q "non-finite update" "$work/err" && [ "$(grep -c "^muonplan: rank" "$work/err")" = $W ] &&
      ok || bad "$case: not every rank stopped with the message: $(cat "$work/err")"
  fi
done
# A healthy run: the check passes (its cost is measured by bench/nonfinite_check_cost.sh).
plan "$work/p.json" tiny-moe $W
m="$(run $W "$work/p.json" --steps 3 --check-reference)" || bad "healthy run: $(cat "$work/err")"
checked "$m" && ok || bad "reference_rel_error $(field "$m" measured.reference_rel_error)"
finish
