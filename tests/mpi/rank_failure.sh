#!/usr/bin/env bash
# Rank failures (docs/reliability.md): one of 4 ranks dies mid-step (SIGKILL) or exits with an
# error (the MUONPLAN_TEST_DIE hook: RANK:STEP:kill|error:WAIT, at the step's WAIT-th
# communicator wait). Every other rank must print a line naming the failed rank and the step,
# and the job must end within 30 s of the failure, with a non-zero status.
#  - killed, with mpirun told to keep the job alive (`--mca orte_abort_on_non_zero_status 0`):
#    the survivors find the silent rank at their deadline (default 20 s + probe);
#  - error, with mpirun's defaults: the failing rank's notice reaches the others at once;
#  - killed, with mpirun's defaults: mpirun tears the job down itself within seconds and the
#    survivors print that the launcher terminated them, with the step.
source "$(dirname "$0")/lib.sh"
W=4
plan "$work/p.json" tiny-moe $W

# Each stderr line prefixed with its arrival time (bash's $EPOCHREALTIME: no fork per line).
stamp() { while IFS= read -r line; do echo "$EPOCHREALTIME $line"; done; }
# launch DIE [mpiexec options]: stderr lines in $work/log; sets status and t_end.
launch() {
  local die="$1"; shift
  MUONPLAN_TEST_DIE="$die" timeout 120 "$mpiexec" "${mpiflags[@]}" -n $W "$@" \
    "$bin" execute --plan "$work/p.json" --steps 100 2>&1 >/dev/null | stamp > "$work/log"
  status=${PIPESTATUS[0]}
  t_end=$EPOCHREALTIME
}
# when PATTERN: arrival time of the first log line matching PATTERN (empty if none)
when() { grep -m1 -- "$1" "$work/log" | cut -d' ' -f1; }
seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
within30() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(b - a < 30) }'; }
# expect_survivors FAILED PATTERN: every other rank printed "muonplan: rank R: PATTERN"
expect_survivors() {
  local r
  for r in $(seq 0 $((W - 1))); do
    [ "$r" = "$1" ] && continue
    grep -q "muonplan: rank $r: $2" "$work/log" && ok || bad "rank $r: no '$2' line: $(cat "$work/log")"
  done
}
# check CASE STATUS_WANTED T_FAILURE: non-zero status, ended within 30 s of the failure
check_end() {
  [ "$status" != 0 ] && [ "$status" != 124 ] && ok || bad "$1: mpiexec status $status"
  if [ -n "$2" ] && within30 "$2" "$t_end"; then ok; else bad "$1: not over within 30 s: $(cat "$work/log")"; fi
  echo "$1: failure to the end of the job: $(seconds "$2" "$t_end") s"
}

# Killed, the job kept alive by mpirun: the survivors name the silent rank themselves.
launch 2:3:kill:3 --mca orte_abort_on_non_zero_status 0
t_kill="$(when "rank 2: test hook: SIGKILL at step 3")"
expect_survivors 2 "rank 2 stopped responding during step 3 "
check_end "SIGKILL, orte_abort_on_non_zero_status 0" "$t_kill"

# An error on one rank: it announces it, the others stop at once naming it.
launch 1:3:error:2
t_error="$(when "rank 1: error: test hook MUONPLAN_TEST_DIE: rank 1 fails at step 3")"
expect_survivors 1 "rank 1 failed at step 3: test hook MUONPLAN_TEST_DIE"
check_end "error, mpirun defaults" "$t_error"

# Killed under mpirun's defaults: mpirun ends the job; the survivors say so, with the step.
launch 3:2:kill:4
t_kill="$(when "rank 3: test hook: SIGKILL at step 2")"
expect_survivors 3 "terminated by the launcher during step 2"
check_end "SIGKILL, mpirun defaults" "$t_kill"
finish
