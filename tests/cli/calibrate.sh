#!/usr/bin/env bash
# muonplan calibrate on committed CPU measurements (tests/data/calibration/cpu, made by
# scripts/gen-calibration-fixtures.sh): the calibrated topology predicts the fitted runs within
# 5% and two held-out runs within 15%; it loads, and `muonplan plan` on it predicts what
# calibrate reported; bad metrics are refused with one line. Fixed inputs, so no wall time is
# measured here.
set -u
source "$(dirname "$0")/lib.sh"
cd tests/data/calibration/cpu || exit 1

fit="dense-none moe-none dense384-none dense-optimizer moe-full"
held="dense-full dense384-optimizer-chunked"
args=(--topology "$root/topologies/cpu-ci.yaml" --out "$work/cal.yaml" --json)
for r in $fit; do args+=(--metrics "$r.metrics.json"); done
for r in $held; do args+=(--check "$r.metrics.json"); done
expect calibrate 0 "" "$bin" calibrate "${args[@]}"
cp "$work/out" "$work/r.json"
"$py" - "$work/r.json" <<'PY' && ok || bad "calibration accuracy"
import json, sys
r = json.load(open(sys.argv[1]))
fit = [x for x in r["runs"] if not x["held_out"]]
held = [x for x in r["runs"] if x["held_out"]]
assert len(fit) == 5 and len(held) == 2, r["runs"]
for x in r["runs"]:
    print(f'{"held-out" if x["held_out"] else "fit":9} {x["measured_s"]:.4f}s predicted '
          f'{x["predicted_before_s"]:.4f} -> {x["predicted_after_s"]:.4f}s '
          f'({100 * x["rel_error_after"]:+.1f}%)  {x["metrics"]}')
assert all(abs(x["rel_error_after"]) <= 0.05 for x in fit), "a fitted run is off by more than 5%"
assert all(abs(x["rel_error_after"]) <= 0.15 for x in held), "a held-out run is off by more than 15%"
assert abs(r["max_fit_error"] - max(abs(x["rel_error_after"]) for x in fit)) < 1e-12
PY

# The written topology loads, and planning on it reproduces calibrate's prediction.
expect "topology cal.yaml" 0 "" "$bin" topology --topology "$work/cal.yaml"
grep -q "^topology .* ($work/cal.yaml): " "$work/out" && ok || bad "cal.yaml: $(head -1 "$work/out")"
expect "plan on cal.yaml" 0 "" "$bin" plan --model cal-dense-384.yaml --topology "$work/cal.yaml" \
  --nodes 1 --gpus-per-node 2 --offload optimizer --offload-staging chunked --json
cp "$work/out" "$work/p.json"
"$py" - "$work/p.json" "$work/r.json" <<'PY' && ok || bad "plan on the calibrated topology disagrees"
import json, sys
p = json.load(open(sys.argv[1]))["predicted"]["optimizer_step_s"]
run = [x for x in json.load(open(sys.argv[2]))["runs"] if "dense384-optimizer-chunked" in x["metrics"]][0]
assert abs(p / run["predicted_after_s"] - 1) < 1e-9, (p, run["predicted_after_s"])
PY

# Bad metrics: one line naming the file and the field.
echo '{"schema": "muonplan.metrics/9"}' > "$work/m9.json"
expect "metrics schema" 2 "$work/m9.json: schema: expected muonplan.metrics/2, got 'muonplan.metrics/9'" \
  "$bin" calibrate --topology "$root/topologies/cpu-ci.yaml" --metrics "$work/m9.json"
sed 's/"plan": "[^"]*"/"plan": "nowhere.json"/' dense-none.metrics.json > "$work/np.json"
expect "missing plan" 2 "$work/np.json: plan: 'nowhere.json' not found, nor beside the metrics file" \
  "$bin" calibrate --topology "$root/topologies/cpu-ci.yaml" --metrics "$work/np.json"
finish
