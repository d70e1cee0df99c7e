#!/usr/bin/env bash
# `cmake --install` gives a copy that works on its own: from /, with the source and build trees
# out of reach (renamed aside is not possible here, so nothing is read from them: the installed
# binary and module find PREFIX/share/muonplan beside themselves, and no source or build path
# is compiled in). Plans, validates, reports, and the Python module plans.
set -u
source "$(dirname "$0")/lib.sh"
build="$(cd "$(dirname "$bin")/.." && pwd)"
prefix="$work/prefix"
expect "cmake --install" 0 "" cmake --install "$build" --prefix "$prefix"
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
  echo "$out" | "$py" -c "import json,sys; d=json.load(sys.stdin); assert d['topology']=='h200-ib' and d['fits']" &&
  ok || bad "installed plan (default topology from share): $out"
# validate from the installed data alone prints what the build's binary prints from the source tree.
"$bin" validate --published "$root/data/calibration/published.yaml" --models "$root/models" \
  --topology "$root/topologies/h200-ib.yaml" --markdown >"$work/validate.want"
expect "installed validate" 0 "" "$prefix/bin/muonplan" validate --markdown
cmp -s "$work/out" "$work/validate.want" && grep -q "^| figure |" "$work/out" && ok ||
  bad "installed validate differs from the source tree's: $(diff "$work/out" "$work/validate.want" | head -5)"
pydir="$(ls -d "$prefix"/lib/python3/dist-packages 2>/dev/null)"
if [ -n "$pydir" ] && ls "$pydir"/muonplan*.so >/dev/null 2>&1; then
  PYTHONPATH="$pydir" "$py" -c "
import muonplan, sys
assert muonplan.__file__.startswith(sys.argv[1]), muonplan.__file__
p = muonplan.plan(sys.argv[2], nodes=1)
assert p['topology'] == 'h200-ib' and p['nodes'] == 1
" "$prefix" "$m" 2>"$work/err" && ok || bad "installed Python module: $(cat "$work/err")"
elif ls "$build"/python/muonplan*.so >/dev/null 2>&1; then  # this build has the module
  bad "the build has the Python module, the installed tree lacks it"
else
  # No bindings in this build: the module's checks cannot run, so the test is skipped (ctest
  # counts exit 77 as skipped), after the checks above.
  echo "skip: no Python module built (bindings off), so the installed module is not checked"
  finish >/dev/null || exit 1
  exit 77
fi
# MUONPLAN_DATA_DIR pointing nowhere: the default topology is a path that fails, clearly.
expect "bad MUONPLAN_DATA_DIR" 2 "/nonexistent/topologies/h200-ib.yaml: file: cannot be read" \
  env MUONPLAN_DATA_DIR=/nonexistent "$prefix/bin/muonplan" plan --model "$m"
finish
