#!/usr/bin/env bash
# muonplan plan / cost / inspect from the command line: exit codes, one-line errors, keys.
set -u
bin="$1"; root="$2"; cd "$root"
pass=0; fail=0
check() {  # name, expected exit code, expected stderr (exact, "" to skip), command...
  local name="$1" code="$2" msg="$3"; shift 3
  local err; err="$("$@" 2>&1 >/dev/null)"; local rc=$?
  if [ "$rc" != "$code" ] || { [ -n "$msg" ] && [ "$err" != "$msg" ]; }; then
    echo "FAIL $name: exit $rc (want $code), stderr: $err"; fail=$((fail + 1))
  else
    pass=$((pass + 1))
  fi
}
M=models/qwen3-8b.yaml
check zero-nodes 2 "--nodes: expected a positive integer or auto, got '0'" "$bin" plan --model $M --nodes 0
check bad-layout 2 "--layout: fsdp=3 does not divide world 8" "$bin" plan --model $M --nodes 1 --layout fsdp=3
check bad-offload 2 "--offload: expected none, optimizer, full or auto, got 'disk'" "$bin" plan --model $M --offload disk
check bad-owners 2 "--owners: expected padded, restart, round-robin or balanced, got 'x'" "$bin" plan --model $M --owners x
check nesterov-full 2 "--nesterov: Nesterov momentum is not supported under full offload" "$bin" plan --model $M --offload full --nesterov
check missing-model 2 "missing.yaml: file: cannot be read" "$bin" plan --model missing.yaml
check bad-flag 2 "" "$bin" plan --model $M --frobnicate
check no-fit 0 "" "$bin" plan --model models/kimi-k2.yaml --max-nodes 2 --gpu-memory-gib 10
check help 0 "" "$bin" plan --help
check tiny-gpu-limit 2 "--gpu-memory-gib: 0.25 GiB is not above the fixed per-GPU overhead (0.5 GiB): nothing can fit" "$bin" plan --model $M --gpu-memory-gib 0.25
check tiny-host-limit 2 "--host-ram-gib: 16 GiB is not above the per-node process overhead (32 GiB): nothing can fit" "$bin" plan --model $M --host-ram-gib 16
check negative-limit 2 "--gpu-memory-gib: must be a finite number > 0, got -3" "$bin" plan --model $M --gpu-memory-gib -3
check workload-file 0 "" "$bin" plan --model models/qwen3-30b-a3b.yaml --workload tests/data/workload/4m-tokens.yaml --nodes 2 --offload none
check workload-bad 2 "tests/data/workload/bad-seq.yaml:2:10: seq_len: must be positive" "$bin" plan --model $M --workload tests/data/workload/bad-seq.yaml
check cost-bad 2 "--rows: must be positive, got -5" "$bin" cost ns --rows -5 --cols 8
# A 1e9-rank world is refused before any per-rank table is allocated.
check billion-ranks 2 "--nodes: a world of 1000000000 ranks is more than muonplan plans for (131072)" "$bin" plan --model $M --nodes 1000000 --gpus-per-node 1000
# The limit's edge: 16384 nodes of 8 is the largest world, one node more is refused.
check past-limit 2 "--nodes: a world of 131080 ranks is more than muonplan plans for (131072)" "$bin" plan --model $M --nodes 16385
# --trace: the predicted step as Chrome trace-event JSON; with a workload, its phases too.
trace="$(mktemp)"
check trace 0 "" "$bin" plan --model models/qwen3-30b-a3b.yaml --workload tests/data/workload/4m-tokens.yaml --nodes 2 --offload full --trace "$trace"
if /usr/bin/python3 - "$trace" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
x = [e for e in ev if e["ph"] == "X"]
stages = [e for e in x if e["pid"] == 0]
tracks = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
assert {"gpu", "network", "pcie_h2d", "pcie_d2h", "cpu"} <= tracks, tracks
assert {e["tid"] for e in stages} >= {0, 1, 2, 3, 4}, "full offload uses every resource"
assert all(e["name"].startswith(e["cat"] + " #") and e["dur"] >= 0 for e in stages)
assert any(e["cat"] == "training_phase" and e["name"] == "forward_backward" for e in x)
PY
then pass=$((pass + 1)); else echo "FAIL trace-json"; fail=$((fail + 1)); fi
rm -f "$trace"
# JSON output carries the decision and writes the same plan to --out.
out="$(mktemp)"
json="$("$bin" plan --model models/kimi-k2.yaml --max-nodes 2 --gpu-memory-gib 10 --json --out "$out")"
if echo "$json" | grep -q '"fits": false' && grep -q '"schema": "muonplan.plan/1"' "$out"; then
  pass=$((pass + 1)); else echo "FAIL no-fit-json"; fail=$((fail + 1)); fi
rm -f "$out"
ms="$("$bin" cost ns --batch 32 --rows 768 --cols 2048 --json | grep '"ms"')"
if [ -n "$ms" ]; then pass=$((pass + 1)); else echo "FAIL cost-json"; fail=$((fail + 1)); fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
