#!/usr/bin/env bash
# Measures the CPU runs that tests/cli/calibrate.sh fits (`muonplan calibrate`): plans and
# executor metrics under tests/data/calibration/cpu/. Run it on a quiet machine (the figures
# are wall times) after scripts/build.sh; the committed files say which machine made them.
# Usage: scripts/gen-calibration-fixtures.sh [steps, default 6]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build/cli/muonplan"
out="$root/tests/data/calibration/cpu"
steps="${1:-6}"
ranks=2  # one rank per core of the 2-core CI machines: each rank's GEMM rate stays the same
cd "$out"
# name model offload [plan flags...]
run() {
  local name="$1" model="$2" offload="$3"; shift 3
  "$bin" plan --model "$model" --topology "$root/topologies/cpu-ci.yaml" --nodes 1 \
    --gpus-per-node $ranks --offload "$offload" --out "$name.plan.json" "$@" >/dev/null
  mpiexec $(bash "$root/scripts/mpiexec-flags.sh" | tr ";" " ") -n $ranks "$bin" execute --plan "$name.plan.json" \
    --steps "$steps" --metrics "$name.metrics.json" >/dev/null
  # The metrics name the plan by the path given; keep it relative to this folder.
  sed -i "s|\"plan\": \"[^\"]*\"|\"plan\": \"$name.plan.json\"|" "$name.metrics.json"
  echo "$name: $(grep -o '"optimizer_step_s": [0-9.e-]*' "$name.metrics.json")"
}
run dense-none "$root/models/tiny-dense.yaml" none
run moe-none "$root/models/tiny-moe.yaml" none
run dense384-none cal-dense-384.yaml none
run dense-optimizer "$root/models/tiny-dense.yaml" optimizer
run moe-full "$root/models/tiny-moe.yaml" full
# Held out of the fit by the test:
run dense-full "$root/models/tiny-dense.yaml" full
run dense384-optimizer-chunked cal-dense-384.yaml optimizer --offload-staging chunked
{
  echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores"
  echo "date: $(date -u +%Y-%m-%d)"
  echo "load_average_before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "command: scripts/gen-calibration-fixtures.sh $steps"
} > MACHINE.txt
