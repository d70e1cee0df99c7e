#!/usr/bin/env bash
# muonplan execute from the command line (docs/reliability.md): its flags are checked before
# the step, one line naming the flag, and what it prints has fixed formats.
#   --inject-nonfinite:  a name that matches no tensor of the plan, or an empty one, is refused
#                        (it injected nothing and exited 0); a real name still poisons the step
#   --comm-timeout:      at least 1 s (1e-9 was accepted)
#   what it prints:      the summary's number formats, and rank 0's progress with --progress
set -u
source "$(dirname "$0")/lib.sh"
plan_micro "$work/p.json" || bad "plan micro"
plan_tiny "$work/tiny.json" 2>"$work/err" || bad "plan: $(cat "$work/err")"

# --- --inject-nonfinite names a tensor of the plan --------------------------------------------
expect "inject nosuch" 2 "muonplan: rank 0: --inject-nonfinite: no tensor named 'nosuch' in the plan" \
  "$bin" execute --plan "$work/p.json" --inject-nonfinite nosuch:1
expect "inject :1" 2 "muonplan: rank 0: --inject-nonfinite: expected NAME:STEP with NAME a tensor of the plan, got an empty name" \
  "$bin" execute --plan "$work/p.json" --inject-nonfinite :1
expect "inject ''" 2 "muonplan: --inject-nonfinite: empty; expected NAME:STEP" \
  "$bin" execute --plan "$work/p.json" --inject-nonfinite ''
# A real name still poisons (exit 1, named), so the check above refuses only misses.
expect "inject real name" 1 "muonplan: rank 0: error: non-finite gradient in model.norm.weight at step 1; parameters and state left as after step 0 (--skip-nonfinite skips such steps)" \
  "$bin" execute --plan "$work/p.json" --inject-nonfinite model.norm.weight:1

# --- --comm-timeout at least 1 s --------------------------------------------------------------
for v in 1e-9 0.5; do
  expect "comm-timeout $v" 2 "--comm-timeout: expected seconds in [1, 1e6], got '$v'" \
    "$bin" execute --plan "$work/p.json" --comm-timeout "$v"
done
timeout 60 "$bin" execute --plan "$work/p.json" --comm-timeout 1 >/dev/null 2>"$work/err" \
  && ok || bad "--comm-timeout 1: $(cat "$work/err")"

# --- What execute prints: fixed formats, and rank 0's progress with --progress ----------------
"$bin" execute --plan "$work/tiny.json" --steps 2 --progress >"$work/out" 2>"$work/err" \
  || bad "execute --progress: $(cat "$work/err")"
grep -Eq '^  step [0-9]+\.[0-9]{4} s \(median' "$work/out" \
  && grep -Eq '^  peak [0-9]+\.[0-9]{3} GiB, transient [0-9]+\.[0-9]{3} GiB' "$work/out" \
  && ok || bad "execute summary formats: $(cat "$work/out")"
[ "$(grep -Ec '^step [12]/2  [0-9.]+ s/step  ETA [0-9]+ s$' "$work/err")" = 2 ] \
  && [ "$(wc -l <"$work/err")" = 2 ] && ok || bad "execute --progress lines: $(cat "$work/err")"

finish
