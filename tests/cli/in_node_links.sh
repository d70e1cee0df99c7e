#!/usr/bin/env bash
# In-node traffic is timed at a real path, never at a floor (issue 33, item 4): a topology
# without an `nvlink` section times it over the GPUs' shared PCIe switch (min of h2d and d2h
# GB/s, x link_efficiency), and one whose GPUs sit on different switches without NVLink is
# refused (no route between them; docs/topology.md). Before, the missing section timed FSDP at
# 1 byte/s: tiny-moe on 2 cpu-ci ranks predicted a 188-million-second step.
set -u
source "$(dirname "$0")/lib.sh"
# fsdp_rate NAME FILE GBPS MAX_STEP_S: the plan's FSDP traffic over its FSDP time is GBPS, and
# the step is under MAX_STEP_S (the 1 byte/s floor made it millions of seconds).
fsdp_rate() {
  json_check "$1" "$2" "
b = d['predicted']['breakdown']
gb = sum(x['gb'] for x in b['traffic_per_gpu_gb'] if x['name'].startswith('fsdp_'))
s = next(x['s'] for x in b['training_hidden_s'] if x['name'] == 'fsdp_comm') + next(
    x['s'] for x in b['training_step_s'] if x['name'] == 'exposed_fsdp_comm')
assert gb > 0 and math.isclose(gb / s, $3, rel_tol=1e-9), (gb, s)
assert d['predicted']['training_step_s'] < $4, d['predicted']['training_step_s']"
}
# cpu-ci has no nvlink section: 20 GB/s PCIe x link_efficiency 0.8 = 16 GB/s for FSDP.
"$bin" plan --model tiny-moe --topology topologies/cpu-ci.yaml --nodes 1 --gpus-per-node 2 \
  --tokens-per-step 4096 --seq-len 512 --json >"$work/cpu.json" 2>"$work/err" || bad "plan: $(cat "$work/err")"
fsdp_rate "cpu-ci FSDP at 16 GB/s" "$work/cpu.json" 16.0 10
# h200-ib with the section removed: refused, its GPUs are on 4 PCIe switches.
"$py" - "$work" <<'PY'
import re, sys
t = open("topologies/h200-ib.yaml").read()
t = re.sub(r"\n  nvlink:\n(    .*\n)+", "\n", t)
assert "nvlink:" not in t.split("runtime")[0].split("pytorch")[0]
open(sys.argv[1] + "/no-nvlink.yaml", "w").write(t)
open(sys.argv[1] + "/one-switch.yaml", "w").write(t.replace("gpus_per_switch: 2", "gpus_per_switch: 8"))
PY
line=$(grep -n "gpus_per_switch" "$work/no-nvlink.yaml" | cut -d: -f1)
col=$(grep "gpus_per_switch" "$work/no-nvlink.yaml" | awk '{print index($0, "2")}')
expect "h200-ib without nvlink" 2 "$work/no-nvlink.yaml:$line:$col: node.pcie.gpus_per_switch: a node without an nvlink section needs all its GPUs on one PCIe switch (8 = node.gpus), got 2" \
  "$bin" plan --model llama-3.1-8b --topology "$work/no-nvlink.yaml" --nodes 1 --tokens-per-step 1048576 --seq-len 8192
# On one switch it plans, FSDP at 55 GB/s PCIe x 0.8 = 44 GB/s (it was 9e11 s).
"$bin" plan --model llama-3.1-8b --topology "$work/one-switch.yaml" --nodes 1 --layout fsdp=8 \
  --tokens-per-step 1048576 --seq-len 8192 --json >"$work/h.json" 2>"$work/err" || bad "plan one switch: $(cat "$work/err")"
fsdp_rate "one switch FSDP at 44 GB/s" "$work/h.json" 44.0 1e3
finish
