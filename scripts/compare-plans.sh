#!/usr/bin/env bash
# Plans every bundled model with two muonplan binaries and compares the outputs byte for byte:
# `plan --json` with the newer binary's top-level `terms` table removed (issue 37 item 2 added
# it), and `plan --explain` text as printed; then each examples/prime-rl config (the plan as
# written and its alternatives' sweep) the same way. For changes that must not move a figure.
# Usage: scripts/compare-plans.sh OLD_MUONPLAN NEW_MUONPLAN (a copied binary finds its data
# through MUONPLAN_DATA_DIR, e.g. build/share/muonplan)
set -euo pipefail
old="$1" new="$2"
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cases=0 diffs=0
# A JSON document without its top-level `terms`, pretty-printed; anything else as it is.
strip_terms() {
  python3 -c 'import json,sys
t=sys.stdin.read()
try: j=json.loads(t)
except ValueError: sys.stdout.write(t); sys.exit()
j.pop("terms",None); print(json.dumps(j,indent=1,sort_keys=True))'
}
# compare NAME ARGS...: one output of each binary, compared.
compare() {
  local name="$1"; shift
  "$old" plan "$@" >"$work/old" 2>&1 || true
  "$new" plan "$@" >"$work/new" 2>&1 || true
  strip_terms <"$work/old" >"$work/old.s"
  strip_terms <"$work/new" >"$work/new.s"
  cases=$((cases + 1))
  if ! cmp -s "$work/old.s" "$work/new.s"; then
    diffs=$((diffs + 1))
    echo "differs: $name" >&2
    { diff "$work/old.s" "$work/new.s" || true; } | head -n 10 >&2
  fi
}
for spec in "$root"/models/*.yaml; do
  model="$(basename "$spec" .yaml)"
  for flags in "--nodes 1" "--nodes auto" "--nodes auto --tokens-per-step 262144 --seq-len 4096"; do
    for mode in json explain; do
      # shellcheck disable=SC2086
      compare "$model $flags --$mode" --model "$model" $flags --$mode
    done
  done
done
# Each example prime-rl config: the plan as written and the alternatives' sweep.
for config in "$root"/examples/prime-rl/*.toml; do
  for mode in json explain; do
    compare "$(basename "$config") --$mode" --trainer-config "$config" --$mode
  done
done
echo "compare-plans: $cases outputs, $diffs differ"
[ "$diffs" -eq 0 ]
