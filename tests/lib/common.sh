# The prologue the tests/cli and tests/mpi helpers share (sourced by tests/cli/lib.sh and
# tests/mpi/lib.sh; not a test itself). ctest passes the muonplan binary and the repo root
# first; the scripts run from the repo root, with a scratch folder $work removed on exit, the
# pass/fail count, and `finish` printing "N passed, N failed" (the exit status: 0 when none
# failed and at least one check ran).
bin="$1"; root="$2"
cd "$root" || exit 1
py=/usr/bin/python3
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
# MUONPLAN_TEST_QUICK=1 (scripts/sanitize.sh): a script runs a representative subset of its
# matrix, each code path once; the plain ctest run (scripts/test.sh) runs all of it.
quick="${MUONPLAN_TEST_QUICK:-0}"
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
# A script that ran no check fails: its checks were skipped by a mistake, not passed.
finish() {
  echo "$pass passed, $fail failed"
  if [ $((pass + fail)) -eq 0 ]; then echo "FAIL: no check ran"; return 1; fi
  [ "$fail" -eq 0 ]
}
