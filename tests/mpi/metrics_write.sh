#!/usr/bin/env bash
# Rank 0 fails to write --metrics (/dev/full) after a 4-rank run (docs/reliability.md): the
# other ranks still wait for it, so they get its failure notice and name it at once. The job
# must end within 5 s of rank 0's line, every rank naming rank 0 and the path (it had taken
# 22 s and the others blamed the launcher when they left before rank 0 wrote).
source "$(dirname "$0")/lib.sh"
W=4
plan "$work/p.json" tiny-moe $W
stamp() { while IFS= read -r line; do echo "$EPOCHREALTIME $line"; done; }
timeout 120 "$mpiexec" "${mpiflags[@]}" -n $W "$bin" execute \
  --plan "$work/p.json" --steps 1 --metrics /dev/full 2>&1 >/dev/null | stamp >"$work/log"
status=${PIPESTATUS[0]}
t_end=$EPOCHREALTIME
[ "$status" != 0 ] && [ "$status" != 124 ] && ok || bad "mpiexec status $status"
t_fail="$(grep -m1 -- "rank 0: error: cannot write /dev/full: No space left on device" "$work/log" |
  cut -d' ' -f1)"
[ -n "$t_fail" ] && ok || bad "no rank 0 line naming /dev/full: $(cat "$work/log")"
for r in 1 2 3; do
  grep -q "muonplan: rank $r: rank 0 failed at step 1: cannot write /dev/full" "$work/log" && ok ||
    bad "rank $r does not name rank 0's failure: $(cat "$work/log")"
done
if [ -n "$t_fail" ] && awk -v a="$t_fail" -v b="$t_end" 'BEGIN { exit !(b - a < 5) }'; then ok
else bad "not over within 5 s of rank 0's failure: $(cat "$work/log")"; fi
[ -n "$t_fail" ] && echo "rank 0's failure to the end of the job: $(awk -v a="$t_fail" \
  -v b="$t_end" 'BEGIN { printf "%.1f", b - a }') s"
finish
