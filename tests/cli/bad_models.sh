#!/usr/bin/env bash
# Bad model inputs: `muonplan inspect --model FILE` must exit 2 and print exactly one line, the
# expected one. A YAML file holds it on its first line (`# expect: LINE`); a JSON file, which
# cannot hold comments, in FILE.expect beside it.
# Usage: bash bad_models.sh MUONPLAN_BINARY REPO_ROOT
set -u
source "$(dirname "$0")/lib.sh"

shopt -s nullglob
files=(tests/data/bad/model/*.yaml tests/data/bad/model/*.json)
[ ${#files[@]} -gt 0 ] || bad "no files under tests/data/bad/model"
for file in "${files[@]}"; do
  case "$file" in
    *.json)
      if [ ! -f "$file.expect" ]; then
        bad "$file: missing $file.expect"
        continue
      fi
      expected=$(head -n 1 "$file.expect")
      ;;
    *)
      first=$(head -n 1 "$file")
      if [ "${first#\# expect: }" = "$first" ]; then
        bad "$file: first line is not '# expect: ...'"
        continue
      fi
      expected=${first#\# expect: }
      ;;
  esac
  expect "$file" 2 "$expected" "$bin" inspect --model "$file"
done
finish
