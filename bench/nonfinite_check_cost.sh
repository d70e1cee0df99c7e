#!/usr/bin/env bash
# The cost of the step's non-finite check (docs/reliability.md): one reduction per Muon chunk
# and one read of the AdamW weights per step. Runs tiny-moe on one CPU rank under each offload
# mode and prints nonfinite_check_s / optimizer_step_s, both medians of steps 2+ measured in
# the same run. A report, never a pass/fail.
# Usage: bench/nonfinite_check_cost.sh [BUILD_DIR] [STEPS]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-$root/build}/cli/muonplan"; steps="${2:-4}"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
export OMPI_MCA_ess_singleton_isolated=1 OMP_NUM_THREADS=1
printf '%-10s %12s %12s %8s\n' offload step_s check_s share
for mode in none optimizer full; do
  "$bin" plan --model "$root/models/tiny-moe.yaml" --topology "$root/topologies/cpu-ci.yaml" \
    --nodes 1 --gpus-per-node 1 --offload "$mode" --out "$work/p.json" >/dev/null
  "$bin" execute --plan "$work/p.json" --steps "$steps" --metrics "$work/m.json" >/dev/null
  /usr/bin/python3 -c "import json, sys
m = json.load(open(sys.argv[1]))['measured']
s, c = m['optimizer_step_s'], m['nonfinite_check_s']
print(f'{sys.argv[2]:<10} {s:12.4f} {c:12.5f} {100 * c / s:7.2f}%')" "$work/m.json" "$mode"
done
