#!/usr/bin/env bash
# The main job: plan GLM-4.5-Air on the bundled default topology (8 x H200 nodes with
# InfiniBand), automatic node count and offload mode, and print the decision.
# Extra arguments go to `muonplan plan` (e.g. --explain, --json, --model models/kimi-k2.yaml).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/build.sh" >/dev/null
model="$root/models/glm-4.5-air.yaml"
for a in "$@"; do [ "$a" = "--model" ] && model=""; done
exec "$root/build/cli/muonplan" plan ${model:+--model "$model"} \
  --topology "$root/topologies/h200-ib.yaml" --nodes auto --offload auto "$@"
