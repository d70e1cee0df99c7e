#!/usr/bin/env bash
# How far a run saved under `full` offload and resumed under `none` ends from a run under `none`
# throughout (docs/executor.md, "Offload modes"): `full` rounds each returned update to bf16, so
# the two runs part at every `full` step and the difference grows with the steps taken in it.
# Prints, over the Muon tensors of tiny-moe on one CPU rank, the median and largest of
# |W_mixed - W_none| / |W_none - W_none@1| (Frobenius; W_none@1: the `none` run after step 1,
# the base both runs share the gradients from), for K steps under full then K under none.
# Usage: bench/offload_resume_diff.sh [K=2] [MUONPLAN_BINARY]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
k="${1:-2}" bin="${2:-$root/build/cli/muonplan}"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
export OMPI_MCA_ess_singleton_isolated=1 OMP_NUM_THREADS=1
for m in none full; do
  "$bin" plan --model "$root/models/tiny-moe.yaml" --topology "$root/topologies/cpu-ci.yaml" \
    --nodes 1 --gpus-per-node 1 --offload "$m" --out "$work/$m.json" >/dev/null
done
"$bin" execute --plan "$work/none.json" --steps 1 --checkpoint "$work/n1" >/dev/null
"$bin" execute --plan "$work/none.json" --steps $((2 * k)) --checkpoint "$work/none" >/dev/null
"$bin" execute --plan "$work/full.json" --steps "$k" --checkpoint "$work/f" >/dev/null
"$bin" execute --plan "$work/none.json" --steps "$k" --resume "$work/f" --checkpoint "$work/mixed" \
  >/dev/null
PYTHONPATH="$root/build/python" /usr/bin/python3 - "$work" "$k" <<'PY'
import json, sys
import numpy as np
import muonplan
work, k = sys.argv[1], int(sys.argv[2])
plan = json.load(open(f"{work}/none.json"))
muon = {t["name"] for t in plan["tensors"] if t["rule"] == "muon"}
base, none, mixed = (muonplan.read_checkpoint(f"{work}/{d}")["tensors"] for d in ("n1", "none", "mixed"))
rel = []
for name in sorted(muon):
    key = name + "/param"
    ref = none[key].astype(np.float64) - base[key]
    rel.append(np.linalg.norm(mixed[key].astype(np.float64) - none[key]) / np.linalg.norm(ref))
rel = np.array(rel)
print(f"{k} steps full then {k} none vs {2 * k} none, {len(rel)} Muon tensors of tiny-moe: "
      f"median {100 * np.median(rel):.3f}%, max {100 * rel.max():.3f}%")
PY
