# Shared by the tests/cli/*.sh scripts (sourced; not a test itself): arguments, a scratch
# folder and the pass/fail count (tests/lib/common.sh), `expect` and `json_check`. ctest
# passes: muonplan binary, repo root.
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# `execute` without mpiexec: one MPI process (singleton mode, without its helper daemon).
export OMPI_MCA_ess_singleton_isolated=1 OMP_NUM_THREADS=1
# expect NAME CODE LINE COMMAND...: exit CODE and stderr exactly the one line LINE ("": no
# stderr at all; EXPECT_MATCH=suffix: one line ending in LINE; EXPECT_MATCH=last: the last line
# ending in LINE, after notes), within EXPECT_TIMEOUT seconds (60) and, when
# EXPECT_VMEM_KB is set, that address-space cap (a regression fails instead of filling memory).
# Under AddressSanitizer (scripts/sanitize.sh) no address-space cap: ASan reserves terabytes of
# shadow memory at start. The command's stdout is left in $work/out for the caller's checks.
asan=0; ldd "$bin" 2>/dev/null | grep -q libasan && asan=1
expect() {
  local name="$1" code="$2" want="$3"; shift 3
  (if [ -n "${EXPECT_VMEM_KB:-}" ] && [ "$asan" = 0 ]; then ulimit -v "$EXPECT_VMEM_KB"; fi
   exec timeout "${EXPECT_TIMEOUT:-60}" "$@") >"$work/out" 2>"$work/err"
  local rc=$? err; err="$(cat "$work/err")"
  local lines; lines="$(wc -l <"$work/err")"
  local matched=0
  if [ "${EXPECT_MATCH:-exact}" = suffix ]; then
    [ "$lines" = 1 ] && [[ "$err" == *"$want" ]] && matched=1
  elif [ "${EXPECT_MATCH:-exact}" = last ]; then
    [[ "$(tail -n 1 "$work/err")" == *"$want" ]] && matched=1
  else
    [ "$err" = "$want" ] && matched=1
  fi
  if [ "$rc" = "$code" ] && [ "$matched" = 1 ]; then ok
  else bad "$name: exit $rc (want $code), stderr: ${err:0:400} (want: $want)"; fi
}
# json_check NAME FILE CODE: the Python CODE passes with `d` the JSON in FILE (asserts, or any
# exception, fail the check and print why).
json_check() {
  local name="$1" file="$2" code="$3" why
  why="$("$py" -c "import json, math, sys
d = json.load(open(sys.argv[1]))
$code" "$file" 2>&1)" && ok || bad "$name: ${why:0:600}"
}
# edit_json IN OUT PYTHON: the JSON in IN, edited by a Python statement on `p`, into OUT.
edit_json() {
  "$py" - "$1" "$2" "$3" <<'PYEOF'
import json, sys
p = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(p, open(sys.argv[2], "w"), indent=1)
PYEOF
}
# plan_micro OUT [plan flags]: the micro-dense test model (tests/data/micro-dense.yaml) on one
# CPU rank, no offload.
plan_micro() {
  local out="$1"; shift
  "$bin" plan --model tests/data/micro-dense.yaml --topology topologies/cpu-ci.yaml --nodes 1 \
    --gpus-per-node 1 --offload none --out "$out" "$@" >/dev/null
}
# plan_tiny OUT [plan flags]: the tiny-dense model (models/tiny-dense.yaml) on one CPU rank, no
# offload.
plan_tiny() {
  local out="$1"; shift
  "$bin" plan --model models/tiny-dense.yaml --topology topologies/cpu-ci.yaml --nodes 1 \
    --gpus-per-node 1 --offload none --out "$out" "$@" >/dev/null
}
