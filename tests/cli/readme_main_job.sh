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
finish
