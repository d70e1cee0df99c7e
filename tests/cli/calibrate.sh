#!/usr/bin/env bash
# muonplan calibrate on committed CPU measurements (tests/data/calibration/cpu, made by
# scripts/gen-calibration-fixtures.sh): the calibrated topology predicts the fitted runs within
# 5% and two held-out runs within 15%; it loads, and `muonplan plan` on it predicts what
# calibrate reported; bad metrics are refused with one line. Fixed inputs, so no wall time is
# measured here.
set -u
source "$(dirname "$0")/lib.sh"
cd tests/data/calibration/cpu || exit 1

# calibrate_ok NAME ARGS...: exit 0, stdout (--json) in $work/out, and stderr only the JSON's
# overfitting warnings, one "warning: " line each (and the fit's progress past a few seconds,
# "calibrate: fitting: ...", on a slow or loaded machine).
calibrate_ok() {
  local name="$1" rc; shift
  "$bin" calibrate "$@" >"$work/out" 2>"$work/err"; rc=$?
  [ $rc = 0 ] && "$py" -c "import json, sys
w = json.load(open(sys.argv[1]))['warnings']
err = [l for l in open(sys.argv[2]) if not l.startswith('calibrate: fitting: ')]
assert ''.join(err) == ''.join('warning: ' + x + '\n' for x in w)" "$work/out" "$work/err" \
    && ok || bad "$name: exit $rc: $(head -c 600 "$work/err")"
}

fit="dense-none moe-none dense384-none dense-optimizer moe-full"
held="dense-full dense384-optimizer-chunked"
args=(--topology "$root/topologies/cpu-ci.yaml" --out "$work/cal.yaml" --json)
for r in $fit; do args+=(--metrics "$r.metrics.json"); done
for r in $held; do args+=(--check "$r.metrics.json"); done
calibrate_ok calibrate "${args[@]}"
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
assert abs(r["max_held_out_error_before"] - max(abs(x["rel_error_before"]) for x in held)) < 1e-12
# The CPU runs drive constants to the ends of their ranges: said, constant by constant.
w = r["warnings"]
assert any(x.startswith("gemm_k_overhead fitted at its lower bound 0 (") for x in w), w
assert any(x.startswith("gemm_tile_m fitted at its lower bound 16 (16)") for x in w), w
assert not any(x.startswith("gemm_efficiency_max") for x in w), w
PY

# Overfitting: one run fits 8 constants to its 2 figures (step time, device busy), and says so;
# the text prints the held-out error before and after.
"$bin" calibrate --topology "$root/topologies/cpu-ci.yaml" --metrics dense-none.metrics.json \
  --holdout moe-full.metrics.json >"$work/one.txt" 2>"$work/one.err"
# The warning names only what would help: the run has busy_s and a run is held out.
grep -qx "warning: 8 constants fitted to 2 measured figures: the fit is underdetermined (more runs pin them down)" \
  "$work/one.err" && ok || bad "underdetermined fit: $(cat "$work/one.err")"
# Without busy_s and without a held-out run, the warning names both; with --out the fit is not
# written (exit 2) unless --force (issue 50 item 8).
edit_json dense-none.metrics.json "$work/nobusy.json" "
del p['measured']['busy_s']
p['plan'] = '$PWD/' + p['plan']"
under=(--topology "$root/topologies/cpu-ci.yaml" --metrics "$work/nobusy.json" --out "$work/under.yaml")
"$bin" calibrate "${under[@]}" >/dev/null 2>"$work/err"; rc=$?
[ $rc = 2 ] && grep -qx "warning: 8 constants fitted to 1 measured figures: the fit is underdetermined (more runs, or measured.busy_s in the 1 run(s) without it, pin them down); check it on a held-out run (--holdout)" "$work/err" \
  && [ "$(tail -1 "$work/err")" = "--out: $work/under.yaml not written: the fit is underdetermined (the warning above says what would pin it down); --force writes it anyway" ] \
  && [ ! -e "$work/under.yaml" ] && ok || bad "underdetermined --out: exit $rc: $(cat "$work/err")"
"$bin" calibrate "${under[@]}" --force >/dev/null 2>&1 && [ -s "$work/under.yaml" ] && ok || bad "underdetermined --force"
grep -qx "held-out error: 59.6% before, 12.5% after" "$work/one.txt" && ok || bad "held-out line: $(tail -2 "$work/one.txt")"
# A fit whose held-out error got worse is not written (calibrated topology, one run refitted),
# unless --force.
worse=(--topology "$work/cal.yaml" --metrics dense-none.metrics.json
       --holdout dense384-optimizer-chunked.metrics.json --out "$work/worse.yaml")
"$bin" calibrate "${worse[@]}" >/dev/null 2>"$work/err"; rc=$?
[ $rc = 2 ] && [ "$(tail -1 "$work/err")" = "--out: $work/worse.yaml not written: the held-out error got worse (0.7% before, 1.0% after): the fit overfits the --metrics runs; --force writes it anyway" ] \
  && [ ! -e "$work/worse.yaml" ] && ok || bad "held-out worse: exit $rc: $(tail -1 "$work/err")"
"$bin" calibrate "${worse[@]}" --force >/dev/null 2>&1 && [ -s "$work/worse.yaml" ] && ok || bad "--force"

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

# The fixed GPU costs from what a CUDA run's runtime reported (measured.gpu_runtime): the CPU
# runs above report none, so overheads.* are kept and said so; two runs given gpu_runtime
# figures (reserved 10% and 5% over the counted peak; 0.75 and 0.6 GiB used outside the pool)
# give the largest of each, written into the topology's overheads section, and a plan on it
# carries them as its cuda_context and allocator_slack terms.
"$py" - "$work/r.json" <<'PY' && ok || bad "CPU runs: overheads not kept"
import json, sys
c = json.load(open(sys.argv[1]))["constants"]
for k in ("overheads.cuda_context_gib", "overheads.allocator_slack_fraction"):
    assert not c[k]["fitted"] and c[k]["note"].startswith("kept: no run reports gpu_runtime"), c[k]
PY
for pair in "dense-none 1.10 0.75" "moe-none 1.05 0.6"; do
  set -- $pair
  edit_json "$1.metrics.json" "$work/$1.gpu.json" "
m = p['measured']
reserved = m['gpu_peak_gib'] * $2
m['gpu_runtime'] = {'pool_reserved_high_gib': reserved, 'pool_used_high_gib': m['gpu_peak_gib'],
                    'device_used_gib': reserved + $3}
p['plan'] = '$PWD/' + p['plan']"
done
# Two CPU runs on h200-ib fit 10 constants to 8 figures: underdetermined, written with --force
# (what is checked here is the overheads the gpu_runtime figures determine).
calibrate_ok "calibrate gpu_runtime" --topology "$root/topologies/h200-ib.yaml" --force \
  --metrics "$work/dense-none.gpu.json" --metrics "$work/moe-none.gpu.json" --out "$work/gpu.yaml" --json
cp "$work/out" "$work/g.json"
"$py" - "$work/g.json" <<'PY' && ok || bad "overheads fitted from gpu_runtime"
import json, sys
c = json.load(open(sys.argv[1]))["constants"]
ctx, slack = c["overheads.cuda_context_gib"], c["overheads.allocator_slack_fraction"]
assert ctx["fitted"] and ctx["before"] == 0.5 and abs(ctx["after"] - 0.75) < 1e-3, ctx
assert slack["fitted"] and slack["before"] == 0.02 and abs(slack["after"] - 0.1) < 1e-3, slack
assert "dense-none.gpu.json" in slack["note"] and "dense-none.gpu.json" in ctx["note"], (ctx, slack)
PY
expect "plan on gpu.yaml" 0 "" "$bin" plan --model "$root/models/qwen3-8b.yaml" \
  --topology "$work/gpu.yaml" --nodes 1 --json
cp "$work/out" "$work/gp.json"
"$py" - "$work/gp.json" <<'PY' && ok || bad "plan on gpu.yaml: fixed terms"
import json, sys
p = json.load(open(sys.argv[1]))["predicted"]
fixed = {t["name"]: t["gib"] for t in p["breakdown"]["gpu_fixed_gib"]}
assert abs(fixed["cuda_context"] - 0.75) < 1e-9, fixed
assert abs(fixed["allocator_slack"] - 0.1 * p["gpu_allocated_gib"]) < 1e-9, (fixed, p["gpu_allocated_gib"])
PY
grep -qE "^  cuda_context_gib: 0\.75 +# fitted by muonplan calibrate" "$work/gpu.yaml" && \
  grep -qE "^  allocator_slack_fraction: 0\.1 +# fitted by muonplan calibrate" "$work/gpu.yaml" && \
  [ "$(grep -c '^overheads:' "$work/gpu.yaml")" = 1 ] && ok || bad "gpu.yaml overheads: $(grep -A4 '^overheads:' "$work/gpu.yaml")"

# Bad metrics: one line naming the file and the field.
echo '{"schema": "muonplan.metrics/9"}' > "$work/m9.json"
expect "metrics schema" 2 "$work/m9.json: schema: expected muonplan.metrics/2, got 'muonplan.metrics/9'" \
  "$bin" calibrate --topology "$root/topologies/cpu-ci.yaml" --metrics "$work/m9.json"
sed 's/"plan": "[^"]*"/"plan": "nowhere.json"/' dense-none.metrics.json > "$work/np.json"
expect "missing plan" 2 "$work/np.json: plan: 'nowhere.json' not found, nor beside the metrics file" \
  "$bin" calibrate --topology "$root/topologies/cpu-ci.yaml" --metrics "$work/np.json"

# A run both fitted and held out is refused (issue 46 item 20): the "check" repeated the fit.
# By device and inode (a hard link, ./ in the path) or, for a path that does not exist, by name.
ln dense-none.metrics.json "$work/hard.json"
expect "fitted and held out" 2 "--check: $work/hard.json is the same file as --metrics dense-none.metrics.json: a run is fitted or held out, not both (the check would repeat the fit)" \
  "$bin" calibrate --topology "$root/topologies/cpu-ci.yaml" --metrics dense-none.metrics.json --holdout "$work/hard.json"
expect "given twice" 2 "--metrics: ./dense-none.metrics.json is the same file as --metrics dense-none.metrics.json: a run given twice counts twice in the fit; give it once" \
  "$bin" calibrate --topology "$root/topologies/cpu-ci.yaml" --metrics dense-none.metrics.json --metrics ./dense-none.metrics.json
tr=$root/tests/data/training-runs/bench-qwen3-0.6b-h100-rl.yaml
expect "training run held out too" 2 "--check: $tr is the same file as --training-run $tr: a run is fitted or held out, not both (the check would repeat the fit)" \
  "$bin" calibrate --topology h100-ib --training-run "$tr" --holdout "$tr"

# The fit's work is bounded by its inputs (issue 46 item 24): tiles x restarts x (200 x
# (constants + 1) + constants + 2) evaluations, each predicting every run. The worst input
# found: measurements 1000x slower than the topology predicts (the GPU check's CPU rehearsal
# fits topologies/h200-ib.yaml to CPU runs), which ran on toward the cap.
"$py" - dense-none.metrics.json "$work/slow.metrics.json" "$PWD/dense-none.plan.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["measured"]["optimizer_step_s"] *= 1000
d["measured"]["busy_s"] = {k: v * 1000 for k, v in d["measured"]["busy_s"].items()}
d["plan"] = sys.argv[3]
json.dump(d, open(sys.argv[2], "w"))
PY
calibrate_ok "worst case" --topology "$root/topologies/h200-ib.yaml" --metrics "$work/slow.metrics.json" --json
json_check "fit work bounded" "$work/out" '
w = d["fit_work"]
n = sum(1 for k, c in d["constants"].items() if c["fitted"] and not k.startswith("gemm_tile"))
assert n == 6, n
assert w["evaluation_bound"] == 6 * 3 * (200 * (n + 1) + n + 2), w
assert 0 < w["evaluations"] <= w["evaluation_bound"], w'
finish
