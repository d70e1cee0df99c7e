#!/usr/bin/env bash
# Every file in tests/data/bad/topology/ must be refused with exit code 2 and exactly the one
# stderr line its first line promises ("# expect: FILE:LINE:COL: field: message").
# Usage: bash bad_topologies.sh MUONPLAN_BINARY REPO_ROOT
set -u
muonplan=$(realpath "$1")
cd "$2" || exit 1

passed=0
failed=0
for file in tests/data/bad/topology/*.yaml; do
  expected=$(head -n 1 "$file" | sed -n 's/^# expect: //p')
  if [[ -z "$expected" ]]; then
    echo "FAIL $file: first line is not '# expect: ...'"
    failed=$((failed + 1))
    continue
  fi
  stderr=$("$muonplan" topology --topology "$file" 2>&1 >/dev/null)
  rc=$?
  if [[ $rc -ne 2 || "$stderr" != "$expected" ]]; then
    echo "FAIL $file"
    echo "  exit code: $rc (expected 2)"
    echo "  expected:  $expected"
    echo "  got:       $stderr"
    failed=$((failed + 1))
  else
    passed=$((passed + 1))
  fi
done
echo "$passed passed, $failed failed"
[[ $failed -eq 0 && $passed -gt 0 ]]
