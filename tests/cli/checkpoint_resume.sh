#!/usr/bin/env bash
# What --resume loads and where --checkpoint saves (docs/reliability.md, docs/checkpoint-format.md):
#   the step counter:    a manifest step past 10^15, or not an integer, is refused naming
#                        manifest.json: step (2^63-2 was accepted and wrapped to a negative step)
#   an interrupted save: --resume DIR with only DIR.old left (a save stopped between its renames)
#                        loads DIR.old, and says so on stderr and in the metrics
#   paths normalised:    --checkpoint . and DIR/. are the directory itself, so its lock is a
#                        sibling (`.` was refused for holding `..lock`, made by muonplan itself)
set -u
source "$(dirname "$0")/lib.sh"
plan_micro "$work/p.json" || bad "plan micro"

# --- The step counter stays in [0, 10^15] -----------------------------------------------------
timeout 60 "$bin" execute --plan "$work/p.json" --checkpoint "$work/ck" >/dev/null 2>"$work/err" \
  || bad "save: $(cat "$work/err")"
for step in 9223372036854775806 1000000000000001 1.5; do
  rm -rf "$work/cks"; cp -r "$work/ck" "$work/cks"
  edit_json "$work/ck/manifest.json" "$work/cks/manifest.json" "p['step'] = $step"
  shown="$("$py" -c "import json; print(json.dumps($step))")"
  expect "manifest step $step" 2 "muonplan: rank 0: $work/cks/manifest.json: step: expected an integer in [0, 10^15], got $shown" \
    "$bin" execute --plan "$work/p.json" --resume "$work/cks"
done

# --- A save interrupted between its renames: only DIR.old is left -----------------------------
plan_tiny "$work/tiny.json" 2>"$work/err" || bad "plan: $(cat "$work/err")"
timeout 60 "$bin" execute --plan "$work/tiny.json" --steps 3 --checkpoint "$work/good" >/dev/null \
  2>"$work/err" || bad "save good: $(cat "$work/err")"
cp -r "$work/good" "$work/int.old"
expect "resume DIR.old" 0 "muonplan: rank 0: --resume: $work/int holds no manifest.json (a save was interrupted); resumed from $work/int.old, step 3" \
  "$bin" execute --plan "$work/tiny.json" --resume "$work/int" --metrics "$work/int-m.json"
json_check "resumed_from" "$work/int-m.json" "assert d['resumed_from'] == '$work/int.old' and d['resumed_step'] == 3 and d['first_step'] == 4, d"

# --- --checkpoint . and DIR/. are the directory itself ----------------------------------------
mkdir -p "$work/dot/ck"
(cd "$work/dot/ck" && timeout 60 "$bin" execute --plan "$work/p.json" --checkpoint . \
  >/dev/null 2>"$work/err") && [ -f "$work/dot/ck/manifest.json" ] && [ ! -e "$work/dot/ck/..lock" ] \
  && ok || bad "--checkpoint . in an empty directory: $(cat "$work/err")"
timeout 60 "$bin" execute --plan "$work/p.json" --checkpoint "$work/dot/ck/." --resume "$work/dot/ck/" \
  >/dev/null 2>"$work/err" && [ ! -e "$work/dot/ck/..lock" ] && ok \
  || bad "--checkpoint DIR/. --resume DIR/: $(cat "$work/err")"
"$py" -c "import json; assert json.load(open('$work/dot/ck/manifest.json'))['step'] == 2" \
  && ok || bad "DIR/. resumed and saved: not at step 2"

finish
