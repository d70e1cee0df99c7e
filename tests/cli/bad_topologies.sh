#!/usr/bin/env bash
# Every file in tests/data/bad/topology/ must be refused with exit code 2 and exactly the one
# stderr line its first line promises ("# expect: FILE:LINE:COL: field: message").
# Usage: bash bad_topologies.sh MUONPLAN_BINARY REPO_ROOT
set -u
source "$(dirname "$0")/lib.sh"

shopt -s nullglob
files=(tests/data/bad/topology/*.yaml)
[ ${#files[@]} -gt 0 ] || bad "no files under tests/data/bad/topology"
for file in "${files[@]}"; do
  expected=$(head -n 1 "$file" | sed -n 's/^# expect: //p')
  if [[ -z "$expected" ]]; then
    bad "$file: first line is not '# expect: ...'"
    continue
  fi
  expect "$file" 2 "$expected" "$bin" topology --topology "$file"
done
finish
