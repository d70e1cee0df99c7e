#!/usr/bin/env bash
# Regenerates the report plots in docs/img/ from the code: the README's capacity-report example
# (`muonplan report --model models/glm-4.5-air.yaml --nodes 1..4`) and the same with a workload,
# whose sweep has a gap at 3 nodes (docs/report.md). Never edited by hand.
# (docs/img/plan-scale.png comes from the planning-time bench: docs/planner.md, "Scale".)
# Usage: scripts/gen-docs-img.sh [muonplan binary]   (Debian's python3-matplotlib; ~1 min)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-$root/build/cli/muonplan}"
cd "$root"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$bin" report --model models/glm-4.5-air.yaml --nodes 1..4 --out "$tmp/plain" >/dev/null
"$bin" report --model models/glm-4.5-air.yaml --nodes 1..4 --tokens-per-step 262144 \
  --seq-len 4096 --out "$tmp/workload" >/dev/null
cp "$tmp/plain/gpu_peak_vs_nodes.png" docs/img/glm-4.5-air-gpu-peak-vs-nodes.png
cp "$tmp/workload/memory_breakdown.png" docs/img/glm-4.5-air-workload-memory-breakdown.png
cp "$tmp/workload/step_time_vs_nodes.png" docs/img/glm-4.5-air-workload-step-time-vs-nodes.png
cp "$tmp/workload/host_ram_vs_nodes.png" docs/img/glm-4.5-air-workload-host-ram-vs-nodes.png
echo "gen-docs-img: wrote docs/img/glm-4.5-air-*.png"
