#!/usr/bin/env bash
# Rank 0 fails to write --metrics (/dev/full) after a 4-rank run (docs/reliability.md): the
# other ranks still wait for it, so they get its failure notice and name it, every rank naming
# rank 0 and the path (the others had blamed the launcher when they left before rank 0 wrote,
# and the job took 22 s). No clock: the ranks' deadline (--comm-timeout) is far past the hang
# guard (timeout 120), so a job that ends at all ended on the notice, not on a deadline.
source "$(dirname "$0")/lib.sh"
W=4
plan "$work/p.json" tiny-moe $W
timeout 120 "$mpiexec" "${mpiflags[@]}" -n $W "$bin" execute --comm-timeout 3600 \
  --plan "$work/p.json" --steps 1 --metrics /dev/full 2>"$work/log" >/dev/null
status=$?
[ "$status" != 0 ] && [ "$status" != 124 ] && ok || bad "mpiexec status $status"
grep -q -- "rank 0: error: cannot write /dev/full: No space left on device" "$work/log" && ok ||
  bad "no rank 0 line naming /dev/full: $(cat "$work/log")"
for r in 1 2 3; do
  grep -q "muonplan: rank $r: rank 0 failed at step 1: cannot write /dev/full" "$work/log" && ok ||
    bad "rank $r does not name rank 0's failure: $(cat "$work/log")"
done
finish
