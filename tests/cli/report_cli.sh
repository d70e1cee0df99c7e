#!/usr/bin/env bash
# muonplan report: renders the glm-4.5-air capacity report for 1..4 nodes and checks it against
# `muonplan plan --json` for the same inputs; bad inputs exit 2, a failing script exits 1;
# --nodes with repeated counts plans each count once.
set -u
source "$(dirname "$0")/lib.sh"
M=models/glm-4.5-air.yaml
out="$work/report"
if "$bin" report --model $M --nodes 1..4 --out "$out" >/dev/null 2>"$work/err"; then ok
else bad "report exited $?: $(cat "$work/err")"; fi

# The decision and the chosen node count, as `muonplan plan` prints them for the same range.
"$bin" plan --model $M --max-nodes 4 --json >"$work/plan.json" || bad "plan --json"
reason="$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['decision']['reason'])" "$work/plan.json")"
nodes="$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['nodes'])" "$work/plan.json")"
[ -f "$out/report.md" ] && ok || bad "no report.md"
grep -qF "**Reason:** $reason" "$out/report.md" && ok || bad "report.md lacks the reason: $reason"
grep -qF "**Chosen:** $nodes node(s)" "$out/report.md" && ok || bad "report.md lacks chosen $nodes node(s)"

# Every plot: present, a PNG, not trivially small, and embedded in report.md.
for png in gpu_peak_vs_nodes host_ram_vs_nodes step_time_vs_nodes memory_breakdown step_time_breakdown \
    owner_loads pipeline_gantt; do
  f="$out/$png.png"
  if [ "$(head -c 8 "$f" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ]; then ok
  else bad "$png.png missing or not a PNG"; fi
  [ "$(stat -c %s "$f" 2>/dev/null || echo 0)" -gt 20000 ] && ok || bad "$png.png under 20 kB"
  grep -qF "($png.png)" "$out/report.md" && ok || bad "$png.png not embedded"
done
[ ! -e "$out/predicted_vs_measured.png" ] && ok || bad "measured plot without --metrics"

# Key numbers of report-data.json equal those of `muonplan plan --json` for the same candidate
# (the report, like `plan` without --nodes or --layout, searches the layout at each node count).
"$bin" plan --model $M --nodes 2 --layout auto --offload none --json >"$work/n2-none.json"
"$bin" plan --model $M --nodes 3 --layout auto --offload full --bf16-momentum --json \
  >"$work/n3-full-bf16.json"
"$bin" plan --model $M --nodes 1 --layout auto --offload optimizer --optimizer adamw --json \
  >"$work/n1-opt-adamw.json"
if "$py" - "$out/report-data.json" "$work" <<'EOF'
import json, sys
data = json.load(open(sys.argv[1]))
work = sys.argv[2]
def point(nodes, offload, optimizer):
    return next(p for p in data["sweep"] if (p["nodes"], p["offload"], p["optimizer"]) ==
                (nodes, offload, optimizer))
errors = []
for nodes, offload, optimizer, name in [(2, "none", "muon", "n2-none"),
                                        (3, "full", "muon-bf16-momentum", "n3-full-bf16"),
                                        (1, "optimizer", "adamw", "n1-opt-adamw")]:
    plan = json.load(open(f"{work}/{name}.json"))
    p = point(nodes, offload, optimizer)
    want = dict(plan["predicted"]); want.pop("breakdown")
    if p["predicted"] != want or p["fits"] != plan["fits"]:
        errors.append(f"sweep {name}: {p['predicted']} != {want}")
    if p["predicted"]["gpu_peak_gib"] != plan["predicted"]["gpu_peak_gib"]:
        errors.append(f"gpu_peak_gib {name}")
if len(data["sweep"]) != 4 * 3 * 4:
    errors.append(f"sweep has {len(data['sweep'])} points, want 48")
plan = json.load(open(f"{work}/plan.json"))
chosen = data["chosen"]
for key in ("nodes", "offload", "fits", "predicted", "decision", "limits", "layout"):
    if chosen[key] != plan[key]:
        errors.append(f"chosen {key} differs from plan --max-nodes 4")
owners = {s["owners"]: s for s in data["owner_strategies"]}
if sorted(owners) != ["balanced", "padded", "restart", "round-robin"]:
    errors.append(f"owner strategies {sorted(owners)}")
b = owners[plan["owners"]]
if b["alltoall_bytes_max"] != plan["predicted"]["alltoall_bytes_per_rank_max"]:
    errors.append("balanced all-to-all max differs from the plan's")
if b["ns_flops_max"] != plan["predicted"]["ns_flops_per_rank_max"]:
    errors.append("balanced NS FLOPs max differs from the plan's")
if len(b["alltoall_bytes_per_rank"]) != plan["world_size"]:
    errors.append("per-rank loads are not one per rank")
print("\n".join(errors))
sys.exit(1 if errors else 0)
EOF
then ok; else bad "report-data.json differs from plan --json"; fi

# --metrics: executor metrics beside the predictions (a metrics file shaped like execute's).
"$py" - "$work/n2-none.json" "$work/metrics.json" <<'EOF'
import json, sys
plan = json.load(open(sys.argv[1]))
pred = dict(plan["predicted"]); pred.pop("breakdown")
measured = {"optimizer_step_s": pred["optimizer_step_s"] * 1.1,
            "alltoall_gb_per_rank_max": pred["alltoall_gb_per_rank_max"],
            "gpu_peak_gib": pred["gpu_peak_gib"] * 0.95, "state_digest": "0"}
json.dump({"schema": "muonplan.metrics/2", "backend": "cpu", "world_size": 16,
           "measured": measured, "predicted": pred}, open(sys.argv[2], "w"))
EOF
if "$bin" report --model $M --nodes 1,2 --metrics "$work/metrics.json" --out "$work/m" >/dev/null 2>"$work/err"
then ok; else bad "report --metrics: $(cat "$work/err")"; fi
[ "$(head -c 4 "$work/m/predicted_vs_measured.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = "89504e47" ] \
  && ok || bad "no predicted_vs_measured.png"
grep -q '`optimizer_step_s` | .* | 1.100 |' "$work/m/report.md" && ok || bad "no measured/predicted table"

# Bad input: exit 2 with the planner's one-line message; a failing script: exit 1 with its stderr.
expect zero-nodes 2 "--nodes: expected a node count, a range A..B or a list A,B,C of positive integers, got '0'" \
  "$bin" report --model $M --nodes 0 --out "$work/x"
expect empty-range 2 "--nodes: empty range '4..2'" "$bin" report --model $M --nodes 4..2 --out "$work/x"
expect missing-model 2 "missing.yaml: file: cannot be read" "$bin" report --model missing.yaml --out "$work/x"
expect bad-owners 2 "--owners: expected padded, restart, round-robin or balanced, got 'x'" \
  "$bin" report --model $M --owners x --out "$work/x"
expect bad-layout 2 "--layout: no candidate node count can take this layout (fsdp=3 does not divide world 16)" \
  "$bin" report --model $M --nodes 1..2 --layout fsdp=3 --out "$work/x"
expect missing-metrics 2 "nope.json: file: cannot be read" \
  "$bin" report --model $M --nodes 1 --metrics nope.json --out "$work/x"
echo '{"measured": {}}' >"$work/partial.json"
expect partial-metrics 2 "$work/partial.json: predicted: missing (expected the metrics of muonplan execute)" \
  "$bin" report --model $M --nodes 1 --metrics "$work/partial.json" --out "$work/x"
printf '#!/bin/sh\necho "boom: no matplotlib" >&2\nexit 3\n' >"$work/fake-python"; chmod +x "$work/fake-python"
err="$(MUONPLAN_REPORT_PYTHON="$work/fake-python" "$bin" report --model $M --nodes 1 --out "$work/x" 2>&1 >/dev/null)"
rc=$?
if [ "$rc" = 1 ] && echo "$err" | grep -q "boom: no matplotlib" && echo "$err" | grep -q "exit 3"; then ok
else bad "failing script: exit $rc, stderr: $err"; fi
# With a workload the sweep is of the training step, and the step-time plot draws it.
wl="--tokens-per-step 1048576 --seq-len 131072 --ac full --ac-offload --lm-head-chunk 1024"
if "$bin" report --model $M --nodes 1..2 $wl --layout cp=4,ep=8 --out "$work/rw" >/dev/null \
    2>"$work/err"; then ok; else bad "workload report exited: $(cat "$work/err")"; fi
grep -qF "Training step time vs node count" "$work/rw/report.md" && ok ||
  bad "workload report does not draw the training step"
"$py" - "$work/rw/report-data.json" <<'EOF2' && ok || bad "workload sweep lacks training steps"
import json, sys
d = json.load(open(sys.argv[1]))
pts = [p for p in d["sweep"] if p["evaluated"]]
assert pts and all(p["predicted"]["training_step_s"] > p["predicted"]["optimizer_step_s"] for p in pts)
assert d["inputs"]["workload"]["lm_head_chunk"] == 1024
EOF2
# --json prints report-data.json as written into the directory (a second report into its own
# directory replaces it).
"$bin" report --model $M --nodes 1..4 --out "$out" --json >"$work/report.json" 2>"$work/err" \
  && cmp -s <("$py" -c "import json,sys; print(json.dumps(json.load(open(sys.argv[1])), sort_keys=True))" "$work/report.json") \
            <("$py" -c "import json,sys; print(json.dumps(json.load(open(sys.argv[1])), sort_keys=True))" "$out/report-data.json") \
  && ok || bad "report --json differs from report-data.json: $(cat "$work/err")"

# --nodes with repeated counts plans each count once, in ascending order.
T="--topology topologies/cpu-ci.yaml"
MUONPLAN_REPORT_PYTHON=/bin/true "$bin" report --model tests/data/micro-dense.yaml $T --nodes 2,1,1,1,1,2 --out "$work/r-rep" \
  >/dev/null 2>"$work/err" || bad "report --nodes 2,1,1,1,1,2: $(cat "$work/err")"
json_check "report repeated nodes" "$work/r-rep/report-data.json" "
assert d['inputs']['node_counts'] == [1, 2], d['inputs']['node_counts']
rows = [(r['nodes'], r['offload'], r['optimizer']) for r in d['sweep']]
assert len(rows) == len(set(rows)) == 2 * 3 * 4, len(rows)"
finish
