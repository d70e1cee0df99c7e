#!/usr/bin/env bash
# prime-rl's benchmark matrix as training-run files (scripts/gen-matrix-runs.py) and the B200
# run, planned once by `muonplan validate --training-run` (docs/validation.md):
# - the files are what the matrix says; every run is planned on the topology it names; the
#   summary counts are the rows' own;
# - GPU reserved is within 10% on every run that ran except the ones docs/validation.md lists
#   with the mechanism believed missing (this set, exactly: a run that leaves its tolerance, or a
#   listed one that comes back, fails here until the doc says so);
# - every fit verdict is right (the OOM run does not fit the card, every run that ran does).
set -u
source "$(dirname "$0")/lib.sh"
"$py" scripts/gen-matrix-runs.py --check >"$work/gen" 2>&1 && ok || bad "matrix files stale: $(cat "$work/gen")"
runs=(tests/data/training-runs/matrix/*.yaml)
[ "${#runs[@]}" = 42 ] && ok || bad "expected 42 matrix runs, found ${#runs[@]}"
runs+=(tests/data/training-runs/bench-intellect-3-b200-rl-lora.yaml)
args=(); for r in "${runs[@]}"; do args+=(--training-run "$r"); done
"$bin" validate "${args[@]}" --json >"$work/v.json" 2>"$work/err"
rc=$?
[ "$rc" = 0 ] || [ "$rc" = 1 ] && ok || bad "validate --training-run: exit $rc: $(head -c 300 "$work/err")"
json_check "validate --training-run: rows, summary, tolerances, verdicts" "$work/v.json" '
runs, s = d["runs"], d["summary"]
name = lambda r: r["run"].rsplit("/", 1)[-1].removesuffix(".yaml")
assert len(runs) == 43 and s["runs"] == 43, len(runs)
topo = {"a6000": "rtx-a6000", "h100": "h100-ib", "h200": "h200-ib", "b200": "b200-ib"}
for r in runs:
    n = name(r)
    gpu = n.split("-")[3] if n.startswith("bench-") else (
        n.split("-")[2] if n.startswith(("qwen3-0.6b", "qwen3-4b")) else n.split("-")[3])
    assert r["topology"] == topo[gpu], (n, r["topology"])
within = lambda f, tol: sum(1 for r in runs if f in r and abs(r[f]["rel_error"]) <= tol)
assert s["step_within"] == within("step_s", s["step_tolerance"]), s
assert s["gpu_within"] == within("gpu_gib", s["memory_tolerance"]), s
assert s["step_runs"] == 42 and s["gpu_runs"] == 42, s
known = {"qwen3-0.6b-a6000-4gpu-rl-full-64k-recompute-fa2-2026-06-24"}
out = {name(r) for r in runs if "gpu_gib" in r and abs(r["gpu_gib"]["rel_error"]) > 0.10}
assert out == known, ("outside 10%", sorted(out - known), "back within", sorted(known - out))
assert s["gpu_within"] == 41, s
oom = [r for r in runs if r["oom"]]
assert len(oom) == 1 and oom[0]["verdict"] == "no fit", oom
assert oom[0]["gpu_peak_gib"] > oom[0]["gpu_limit_gib"] == 79.18, oom
assert s["verdicts_right"] == 43, [name(r) for r in runs if not r["verdict_right"]]
assert all(r["verdict"] in ("fits", "tight") for r in runs if not r["oom"])
for r in runs:
    if "step_s" in r:
        assert r["step_s"]["predicted"] > 0 and r["gpu_gib"]["predicted"] > 0, r
'
# The text form's summary line says the same counts.
"$bin" validate "${args[@]}" >"$work/v.txt" 2>/dev/null
"$py" - "$work/v.json" "$work/v.txt" <<'PY' && ok || bad "text summary differs from the JSON's"
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
want = (f"step time within 15%: {s['step_within']} of 42; GPU peak within 10%: {s['gpu_within']} "
        f"of 42; fit verdicts right: 43 of 43")
assert open(sys.argv[2]).read().rstrip().splitlines()[-1] == want, want
PY
# A run file naming an unknown topology is an input error naming it.
sed 's/^topology: .*/topology: no-such-topology/' "${runs[0]}" >"$work/bad.yaml"
EXPECT_MATCH=suffix expect "validate: unknown topology" 2 "no-such-topology: file: cannot be read" \
  "$bin" validate --training-run "$work/bad.yaml"
finish
