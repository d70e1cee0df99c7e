#!/usr/bin/env bash
# The main job: plan a prime-rl run from its own config file. By default
# examples/prime-rl/glm-4.5-air-muon-rl-131k.toml (GLM-4.5-Air RL at 131k context with Muon) on
# the bundled default topology (8 x H200 nodes with InfiniBand): the config as written (does
# it fit, GPU peak, host RAM per node, step time), then the best alternative by each objective
# with the prime-rl keys to change. Extra arguments go to `muonplan plan` (--explain, --json,
# --max-nodes N, --emit prime-rl, --trainer-config FILE, --model ...).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/build.sh" >/dev/null  # progress on stderr
config="$root/examples/prime-rl/glm-4.5-air-muon-rl-131k.toml"
for a in "$@"; do [ "$a" = "--trainer-config" ] && config=""; done
exec "$root/build/cli/muonplan" plan ${config:+--trainer-config "$config"} \
  --topology "$root/topologies/h200-ib.yaml" "$@"
