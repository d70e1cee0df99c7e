#!/usr/bin/env bash
# Newton-Schulz coefficients are used in fp32, so they are checked there (issue 33 item 24):
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
finish
