#!/usr/bin/env bash
# Rank failures (docs/reliability.md): one of 4 ranks dies mid-step (SIGKILL) or exits with an
# error (the MUONPLAN_TEST_DIE hook: RANK:STEP:kill|error:WAIT, at the step's WAIT-th
# communicator wait). Every other rank must print a line naming the failed rank and the step,
# and the job must end, with a non-zero status:
#  - killed, with mpirun told to keep the job alive (`--mca orte_abort_on_non_zero_status 0`):
#    the survivors find the silent rank at their deadline (default 20 s + probe);
#  - error, with mpirun's defaults: the failing rank's notice reaches the others (their
#    deadline is far past the hang guard, so the job ends on the notice or not at all);
#  - killed, with mpirun's defaults: mpirun tears the job down itself and the survivors print
#    that the launcher terminated them, with the step (deadline as for the error).
# No clock: what each survivor prints says which way it learned of the failure, and
# `timeout 120` is only the hang guard.
# What the check reads must not depend on scheduling (issue 46 item 23: rank 0 or 1 missed its
# line in about 1 run of 2 beside two busy processes). Two things raced the launcher:
#  - OpenMPI's shared-memory single copy (vader's CMA): a survivor reading a message straight
#    out of the killed rank's memory at that moment gets ESRCH inside OpenMPI ("Read -1,
#    expected 7000, errno = 3"), and OpenMPI ends that process itself, before mpirun's SIGTERM
#    and so without our line. Whether a survivor is mid-read depends on scheduling, so the
#    single copy is off here (copy in, copy out through shared memory: a dead peer's messages
#    just never arrive), and the survivors can only learn of the failure the ways checked below.
#  - mpirun's SIGKILL, 1 s after its SIGTERM (odls_base_sigkill_timeout): a survivor not
#    scheduled within it dies without the line. 3 s here (each kill then costs 4 s more).
# Measured: 8 of 8 runs of the third case with every line, beside two `yes`, where 2 of 4
# missed one before.
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_odls_base_sigkill_timeout=3
source "$(dirname "$0")/lib.sh"
W=4
plan "$work/p.json" tiny-moe $W

# launch DIE [mpiexec options] [-- execute options]: stderr lines in $work/log; sets status.
launch() {
  local die="$1" opts=() ; shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
  [ "${1:-}" = -- ] && shift
  MUONPLAN_TEST_DIE="$die" timeout 120 "$mpiexec" "${mpiflags[@]}" -n $W "${opts[@]}" \
    "$bin" execute --plan "$work/p.json" --steps 100 "$@" 2>"$work/log" >/dev/null
  status=$?
}
# expect_line PATTERN: the log has a line matching PATTERN
expect_line() { grep -q -- "$1" "$work/log" && ok || bad "no '$1' line: $(cat "$work/log")"; }
# expect_survivors FAILED PATTERN: every other rank printed "muonplan: rank R: PATTERN"
expect_survivors() {
  local r
  for r in $(seq 0 $((W - 1))); do
    [ "$r" = "$1" ] && continue
    grep -q "muonplan: rank $r: $2" "$work/log" && ok || bad "rank $r: no '$2' line: $(cat "$work/log")"
  done
}
# check_end CASE: non-zero status, and not the hang guard's
check_end() { [ "$status" != 0 ] && [ "$status" != 124 ] && ok || bad "$1: mpiexec status $status"; }

# Killed, the job kept alive by mpirun: the survivors name the silent rank themselves.
launch 2:3:kill:3 --mca orte_abort_on_non_zero_status 0
expect_line "rank 2: test hook: SIGKILL at step 3"
expect_survivors 2 "rank 2 stopped responding during step 3 "
check_end "SIGKILL, orte_abort_on_non_zero_status 0"

# An error on one rank: it announces it, the others stop at once naming it.
launch 1:3:error:2 -- --comm-timeout 3600
expect_line "rank 1: error: test hook MUONPLAN_TEST_DIE: rank 1 fails at step 3"
expect_survivors 1 "rank 1 failed at step 3: test hook MUONPLAN_TEST_DIE"
check_end "error, mpirun defaults"

# Killed under mpirun's defaults: mpirun ends the job; the survivors say so, with the step.
launch 3:2:kill:4 -- --comm-timeout 3600
expect_line "rank 3: test hook: SIGKILL at step 2"
expect_survivors 3 "terminated by the launcher during step 2"
check_end "SIGKILL, mpirun defaults"
finish
