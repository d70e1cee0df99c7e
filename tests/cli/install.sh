#!/usr/bin/env bash
# `cmake --install` gives a copy that works on its own: from /, with the source and build trees
# out of reach (renamed aside is not possible here, so nothing is read from them: the installed
# binary and module find PREFIX/share/muonplan beside themselves, and no source or build path
# is compiled in). Plans, validates, reports, and the Python module plans.
set -u
bin="$1"; root="$2"
build="$(cd "$(dirname "$bin")/.." && pwd)"
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
prefix="$(mktemp -d)"; trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null 2>"$prefix.err" && ok ||
  bad "cmake --install: $(cat "$prefix.err")"
rm -f "$prefix.err"
for f in bin/muonplan share/muonplan/models/glm-4.5-air.yaml share/muonplan/topologies/h200-ib.yaml \
    share/muonplan/reports/report.py share/muonplan/calibration/published.yaml; do
  [ -e "$prefix/$f" ] && ok || bad "not installed: $f"
done
# No compiled-in path to the data in the source or build tree. (Source file names do appear in
# debug info and in ASan's metadata of instrumented builds: those are not lookups.)
found=""
for d in "$root/models" "$root/topologies" "$root/reports" "$root/tests/data" "$build/share"; do
  grep -qaF "$d" "$prefix/bin/muonplan" && found="$found $d"
done
[ -z "$found" ] && ok || bad "bin/muonplan holds the data path(s)$found"
cd / || exit 1
m="$prefix/share/muonplan/models/glm-4.5-air.yaml"
out="$("$prefix/bin/muonplan" plan --model "$m" --json 2>&1)" &&
  echo "$out" | /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); assert d['topology']=='h200-ib' and d['fits']" &&
  ok || bad "installed plan (default topology from share): $out"
"$prefix/bin/muonplan" validate >/dev/null 2>"$prefix/err" && ok || bad "installed validate: $(cat "$prefix/err")"
"$prefix/bin/muonplan" report --model "$m" --nodes 1..2 --out "$prefix/rep" >/dev/null 2>"$prefix/err" &&
  [ -f "$prefix/rep/report.md" ] && ok || bad "installed report: $(cat "$prefix/err")"
py="$(ls -d "$prefix"/lib/python3/dist-packages 2>/dev/null)"
if [ -n "$py" ] && ls "$py"/muonplan*.so >/dev/null 2>&1; then
  PYTHONPATH="$py" /usr/bin/python3 -c "
import muonplan, sys
assert muonplan.__file__.startswith(sys.argv[1]), muonplan.__file__
p = muonplan.plan(sys.argv[2], nodes=1)
assert p['topology'] == 'h200-ib' and p['nodes'] == 1
" "$prefix" "$m" 2>"$prefix/err" && ok || bad "installed Python module: $(cat "$prefix/err")"
else
  echo "note: no Python module installed (bindings off in this build)"
fi
# MUONPLAN_DATA_DIR pointing nowhere: the default topology is a path that fails, clearly.
MUONPLAN_DATA_DIR=/nonexistent "$prefix/bin/muonplan" plan --model "$m" >/dev/null 2>"$prefix/err"
[ $? = 2 ] && grep -q "/nonexistent/topologies/h200-ib.yaml" "$prefix/err" && ok ||
  bad "bad MUONPLAN_DATA_DIR: $(cat "$prefix/err")"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
