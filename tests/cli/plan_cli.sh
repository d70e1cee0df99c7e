#!/usr/bin/env bash
# muonplan plan / cost / inspect from the command line: exit codes, one-line errors, and what
# the successful runs print (the no-fit answer, --help, a workload plan, the NS cost).
set -u
source "$(dirname "$0")/lib.sh"
M=models/qwen3-8b.yaml
expect zero-nodes 2 "--nodes: expected a positive integer or auto, got '0'" "$bin" plan --model $M --nodes 0
expect bad-layout 2 "--layout: fsdp=3 does not divide world 8" "$bin" plan --model $M --nodes 1 --layout fsdp=3
expect bad-offload 2 "--offload: expected none, optimizer, full or auto, got 'disk'" "$bin" plan --model $M --offload disk
expect bad-owners 2 "--owners: expected padded, restart, round-robin or balanced, got 'x'" "$bin" plan --model $M --owners x
# Every path that refuses Nesterov under full offload gives the one message (check_nesterov):
# the flag, and a plan file edited by hand, on execute.
nesterov="Nesterov momentum is not supported under full offload (the host folds the momentum before the device sees it); plan with --offload optimizer or none"
expect nesterov-full 2 "--nesterov: $nesterov" "$bin" plan --model $M --offload full --nesterov
"$bin" plan --model tests/data/micro-dense.yaml --topology topologies/cpu-ci.yaml --nodes 1 \
  --gpus-per-node 1 --offload full --out "$work/full.json" >/dev/null || bad "plan micro full"
edit_json "$work/full.json" "$work/fulln.json" "p['optimizer_config']['nesterov'] = True"
expect nesterov-plan-file 2 "muonplan: rank 0: $work/fulln.json: optimizer_config.nesterov: $nesterov" \
  "$bin" execute --plan "$work/fulln.json"
expect missing-model 2 "missing.yaml: file: cannot be read" "$bin" plan --model missing.yaml
# An unknown flag: CLI11's one line, prefixed with the program's name.
expect bad-flag 2 "muonplan: The following argument was not expected: --frobnicate" \
  "$bin" plan --model $M --frobnicate
expect tiny-gpu-limit 2 "--gpu-memory-gib: 0.25 GiB is not above the fixed per-GPU overhead (0.5 GiB): nothing can fit" "$bin" plan --model $M --gpu-memory-gib 0.25
expect tiny-host-limit 2 "--host-ram-gib: 16 GiB is not above the per-node process overhead (32 GiB): nothing can fit" "$bin" plan --model $M --host-ram-gib 16
expect negative-limit 2 "--gpu-memory-gib: must be a finite number > 0, got -3" "$bin" plan --model $M --gpu-memory-gib -3
expect workload-bad 2 "tests/data/workload/bad-seq.yaml:2:10: seq_len: must be positive" "$bin" plan --model $M --workload tests/data/workload/bad-seq.yaml
expect cost-bad 2 "--rows: must be positive, got -5" "$bin" cost ns --rows -5 --cols 8
# A 1e9-rank world is refused before any per-rank table is allocated.
expect billion-ranks 2 "--nodes: a world of 1000000000 ranks is more than muonplan plans for (131072)" "$bin" plan --model $M --nodes 1000000 --gpus-per-node 1000
# The limit's edge: 16384 nodes of 8 is the largest world, one node more is refused.
expect past-limit 2 "--nodes: a world of 131080 ranks is more than muonplan plans for (131072)" "$bin" plan --model $M --nodes 16385

# --trace: the predicted step as Chrome trace-event JSON; with a workload, its phases too.
expect trace 0 "" "$bin" plan --model models/qwen3-30b-a3b.yaml \
  --workload tests/data/workload/4m-tokens.yaml --nodes 2 --offload full --trace "$work/trace.json"
json_check trace-json "$work/trace.json" '
ev = d["traceEvents"]
x = [e for e in ev if e["ph"] == "X"]
stages = [e for e in x if e["pid"] == 0]
tracks = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
assert {"gpu", "network", "pcie_h2d", "pcie_d2h", "cpu"} <= tracks, tracks
assert {e["tid"] for e in stages} >= {0, 1, 2, 3, 4}, "full offload uses every resource"
assert all(e["name"].startswith(e["cat"] + " #") and e["dur"] >= 0 for e in stages)
assert any(e["cat"] == "training_phase" and e["name"] == "gemm" for e in x)'

# kimi-k2 in 10 GiB per GPU on up to 2 nodes: no fit is an answer (exit 0, nothing on stderr),
# with the reason and the closest candidate. The JSON says fits=false with the limits given,
# every candidate too large, and writes the same plan to --out; the text prints its reason.
nofit=(plan --model models/kimi-k2.yaml --max-nodes 2 --gpu-memory-gib 10)
expect no-fit-json 0 "" "$bin" "${nofit[@]}" --json --out "$work/nofit.out.json"
cp "$work/out" "$work/nofit.json"
json_check no-fit-json "$work/nofit.json" '
p = d["predicted"]
assert d["fits"] is False and d["schema"] == "muonplan.plan/2", d["fits"]
assert d["limits"]["gpu_memory_gib"] == 10, d["limits"]
assert p["gpu_peak_gib"] > 10, p["gpu_peak_gib"]  # the closest candidate, still too large
# Even 2 nodes cannot fit (the search floor at 16 ranks is over 10 GiB): only 1 node is
# evaluated, every layout and mode of it, and the reason says so.
assert d["nodes"] == 1 and d["world_size"] == 8, (d["nodes"], d["world_size"])
c = d["decision"]["candidates"]
assert len(c) > 3 and not any(x["fits"] for x in c) and {x["nodes"] for x in c} == {1}, c
r = d["decision"]["reason"]
want = "does not fit on any candidate up to 2 node(s): every candidate needs at least "
assert r.startswith(want), (r, want)
assert "only the first of 2 node counts was evaluated; closest: 1 node(s), offload %s (GPU peak %.1f GiB" % (
    d["offload"], p["gpu_peak_gib"]) in r, r
assert json.load(open(sys.argv[1].replace("nofit.json", "nofit.out.json"))) == d'
expect no-fit 0 "" "$bin" "${nofit[@]}"
reason="$("$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["decision"]["reason"])' \
  "$work/nofit.json")"
grep -qxF "decision: NO FIT: $reason" "$work/out" && ok || bad "no-fit: no 'decision: NO FIT: $reason' line"

# --help: usage, the flags, and the choices of --offload and --owners.
expect help 0 "" "$bin" plan --help
grep -q "^Usage: .*muonplan plan \[OPTIONS\]" "$work/out" && ok || bad "help: no usage line"
for flag in --model --topology --nodes --max-nodes --gpus-per-node --layout --optimizer --offload \
    --owners --ns-schedule --workload --json --explain --emit --out; do
  grep -qE "^ +$flag( |$)" "$work/out" && ok || bad "help does not list $flag"
done
choices_listed() {  # flag, choices...: the flag's help line names every choice
  local flag="$1" line c; shift
  line="$(grep -E "^ +$flag " "$work/out")"
  for c in "$@"; do [[ " $line " =~ [^a-z-]$c[^a-z-] ]] || return 1; done
}
choices_listed --offload none optimizer full auto && ok || bad "help: --offload choices"
choices_listed --owners padded restart round-robin balanced && ok || bad "help: --owners choices"

# A workload file: the training step is planned, slower than the optimizer step it contains.
expect workload-file 0 "" "$bin" plan --model models/qwen3-30b-a3b.yaml \
  --workload tests/data/workload/4m-tokens.yaml --nodes 2 --offload none --json
json_check workload-file "$work/out" '
w, p = d["workload"], d["predicted"]
assert (w["tokens_per_step"], w["seq_len"], w["ac"]) == (4194304, 4096, "full"), w
assert d["nodes"] == 2 and d["offload"] == "none" and d["fits"], (d["nodes"], d["offload"])
assert p["training_step_s"] > p["optimizer_step_s"] > 0, p'

# NS cost: 32 x [768, 2048], 5 quintic iterations of 4 m^2 n + 2 m^3 FLOPs, the time the sum of
# its parts.
expect cost-json 0 "" "$bin" cost ns --batch 32 --rows 768 --cols 2048 --json
json_check cost-json "$work/out" '
m, n = 768, 2048
assert d["iterations"] == 5 and d["flops"] == 32 * 5 * (4 * m * m * n + 2 * m ** 3), d["flops"]
assert math.isclose(d["ms"], d["normalize_ms"] + d["gemm_ms"], rel_tol=1e-12)
it = sum(g["ms"] for g in d["gemms_per_iteration"])
assert math.isclose(d["gemm_ms"], 5 * it, rel_tol=1e-12), (d["gemm_ms"], it)
assert math.isclose(d["tflops_per_s"], d["flops"] / d["ms"] / 1e9, rel_tol=1e-12)'
# Layouts that tie on every figure (ep does not change the optimizer step of GLM-4.5-Air on one
# node) are one row naming the range, and the JSON still lists every candidate.
"$bin" plan --model glm-4.5-air >"$work/tie.txt" 2>"$work/err" || bad "plan glm-4.5-air: $(cat "$work/err")"
[ "$(grep -c '^    1  fsdp=8,cp=1,ep=1..8 ' "$work/tie.txt")" = 3 ] \
  && [ "$(grep -c '^    1  fsdp=8,cp=1,ep=[0-9] ' "$work/tie.txt")" = 0 ] \
  && grep -q '^(a range such as ep=1..8' "$work/tie.txt" && ok || bad "tied rows not collapsed: $(cat "$work/tie.txt")"
"$bin" plan --model glm-4.5-air --json >"$work/tie.json" 2>/dev/null
json_check "tied candidates in JSON" "$work/tie.json" "assert len(d['decision']['candidates']) == 12, len(d['decision']['candidates'])"
finish
