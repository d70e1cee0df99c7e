#!/usr/bin/env bash
# The README's main-job block is what the main job prints now (scripts/gen-readme.sh writes
# it), and the main job plans Muon (issue 36 item 13): the seed's question, how many nodes
# GLM-4.5-Air needs with Muon, from a prime-rl config.
set -u
source "$(dirname "$0")/lib.sh"
if bash scripts/gen-readme.sh --check "$bin" 2>"$work/err"; then ok
else bad "$(tail -n 30 "$work/err")"; fi
block="$(sed -n '/^## What the main job prints/,/^## /p' README.md)"
grep -q "optimizer muon" <<<"$block" && grep -q "^chosen: " <<<"$block" \
  && grep -q "^  as written: " <<<"$block" && ok || bad "the main job's block does not plan Muon"
# The README's NCCL figures are the main job's run planned with [weight_broadcast] type = "nccl".
{ cat examples/prime-rl/glm-4.5-air-muon-rl-131k.toml; printf '\n[weight_broadcast]\ntype = "nccl"\n'; } >"$work/nccl.toml"
"$bin" plan --trainer-config "$work/nccl.toml" --json >"$work/nccl.json" 2>/dev/null
json_check "README: the NCCL broadcast's figures" "$work/nccl.json" "
import re
t = {x['name']: x['s'] for x in d['predicted']['breakdown']['between_steps_s']}
text = ' '.join(open('README.md').read().split())
m = re.search(r'for this run ([0-9.]+) s \(\x60weight_gather\x60, .*?, ([0-9.]+) s; \x60weight_broadcast\x60, .*?, ([0-9.]+) s\)', text)
assert m, 'no NCCL figures in the README'
total, gather, send = (float(g) for g in m.groups())
assert f'{sum(t.values()):.1f}' == m.group(1), (t, m.group(1))
assert f\"{t['weight_gather']:.1f}\" == m.group(2) and f\"{t['weight_broadcast']:.1f}\" == m.group(3), (t, m.groups())
"
finish
