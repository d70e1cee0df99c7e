#!/usr/bin/env bash
# A plan's `predicted` is checked when execute loads it, by the rules report and calibrate apply
# to metrics (docs/reliability.md; check_plan_predicted, planfile/src/plan_checks.cc), so that
# execute never writes metrics they refuse: -5, 1e300, "fast", a key plan does not write, an
# object where a figure belongs, or a `predicted` that is not an object, exit 2 naming
# FILE: predicted.KEY. What plan writes passes; execute's metrics hold exactly the plan's
# figures, and calibrate reads them.
set -u
source "$(dirname "$0")/lib.sh"
T="--topology topologies/cpu-ci.yaml"
plan_micro "$work/p.json" || bad "plan micro"

key="$("$py" -c "import json; p = json.load(open('$work/p.json')); print(next(k for k, v in p['predicted'].items() if isinstance(v, (int, float)) and not isinstance(v, bool)))")"
for v in -5 1e300 '"fast"'; do
  edit_json "$work/p.json" "$work/pv.json" "p['predicted']['$key'] = $v"
  shown="$("$py" -c "import json; print(json.dumps($v))")"
  case "$v" in '"fast"') what="expected a number, got $shown" ;;
    *) what="expected a number in [0, 1e18], got $(printf '%s' "$v" | sed 's/1e300/1e+300/')" ;; esac
  expect "plan predicted $v" 2 "muonplan: rank 0: $work/pv.json: predicted.$key: $what" \
    "$bin" execute --plan "$work/pv.json"
done
edit_json "$work/p.json" "$work/pv.json" "p['predicted'] = 5"
expect "plan predicted 5" 2 "muonplan: rank 0: $work/pv.json: predicted: expected an object, got 5" \
  "$bin" execute --plan "$work/pv.json"
# A key the figures' table lacks, or an object where a figure belongs, was copied into the
# metrics unread (metric_keys.h): refused as the plan loader refuses it.
edit_json "$work/p.json" "$work/pv.json" "p['predicted']['gpu_peak_gb'] = 1"
expect "plan predicted unknown key" 2 "muonplan: rank 0: $work/pv.json: predicted.gpu_peak_gb: unknown key (muonplan plan does not write it)" \
  "$bin" execute --plan "$work/pv.json"
edit_json "$work/p.json" "$work/pv.json" "p['predicted']['$key'] = {'a': 1}"
expect "plan predicted object" 2 "muonplan: rank 0: $work/pv.json: predicted.$key: expected a number, got an object of 1 keys" \
  "$bin" execute --plan "$work/pv.json"
# The metrics' `predicted` holds exactly the table's figures, the plan's values.
timeout 60 "$bin" execute --plan "$work/p.json" --metrics "$work/pm.json" >/dev/null 2>"$work/err" \
  || bad "execute for metrics: $(cat "$work/err")"
"$py" - "$work/p.json" "$work/pm.json" <<'PY' && ok || bad "metrics predicted differs from the plan's"
import json, sys
plan, metrics = (json.load(open(a)) for a in sys.argv[1:3])
want = {k: v for k, v in plan["predicted"].items() if k != "breakdown"}
assert metrics["predicted"] == want, (metrics["predicted"], want)
PY
# What plan writes passes, and its metrics are what report and calibrate read.
timeout 60 "$bin" execute --plan "$work/p.json" --metrics "$work/m.json" >/dev/null 2>"$work/err" \
  || bad "execute for metrics: $(cat "$work/err")"
"$bin" calibrate --metrics "$work/m.json" $T >/dev/null 2>"$work/err" || bad "calibrate: $(cat "$work/err")"

finish
