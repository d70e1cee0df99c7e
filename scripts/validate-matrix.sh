#!/usr/bin/env bash
# Every run of prime-rl's benchmark matrix (tests/data/training-runs/matrix/, generated from
# data/calibration/prime-rl-benchmarks.yaml by scripts/gen-matrix-runs.py) and the B200 run of
# published.yaml, planned on its own topology beside what was measured: step time, GPU peak
# (max_memory_reserved) and fit verdict, and how many are within tolerance (docs/validation.md).
# Nothing is fitted. Usage: scripts/validate-matrix.sh [BIN] [extra validate flags: --json,
# --markdown]. Exit status: muonplan validate's (1 when a run leaves its tolerance).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-$root/build/cli/muonplan}"
[ $# -gt 0 ] && shift
export MUONPLAN_DATA_DIR="${MUONPLAN_DATA_DIR:-$root/build/share/muonplan}"
runs=("$root"/tests/data/training-runs/matrix/*.yaml
      "$root"/tests/data/training-runs/bench-intellect-3-b200-rl-lora.yaml)
args=()
for r in "${runs[@]}"; do args+=(--training-run "$r"); done
exec "$bin" validate "${args[@]}" "$@"
