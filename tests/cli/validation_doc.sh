#!/usr/bin/env bash
# docs/validation.md holds exactly what `muonplan validate --markdown` prints now.
set -u
bin="$1"; root="$2"
expected="$("$bin" validate --published "$root/tests/data/calibration/published.yaml" \
  --models "$root/models" --topology "$root/topologies/h200-ib.yaml" --markdown)"
rc=$?
actual="$(sed -n '/^| figure |/,$p' "$root/docs/validation.md")"
if [ $rc -ne 0 ]; then echo "validate exited $rc (a check failed)"; echo "0 passed, 1 failed"; exit 1; fi
if [ "$expected" != "$actual" ]; then
  echo "docs/validation.md is stale: run scripts/gen-validation.sh"
  diff <(echo "$expected") <(echo "$actual")
  echo "0 passed, 1 failed"; exit 1
fi
echo "1 passed, 0 failed"
