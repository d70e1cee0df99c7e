#!/usr/bin/env bash
# Bad model inputs: `muonplan inspect --model FILE` must exit 2 and print exactly one line, the
# expected one. A YAML file holds it on its first line (`# expect: LINE`); a JSON file, which
# cannot hold comments, in FILE.expect beside it.
# Usage: bash bad_models.sh MUONPLAN_BINARY REPO_ROOT
set -u
muonplan=$(realpath "$1")
cd "$2" || exit 1

passed=0
failed=0
fail() {
  echo "FAIL $1: $2"
  failed=$((failed + 1))
}

shopt -s nullglob
files=(tests/data/bad/model/*.yaml tests/data/bad/model/*.json)
if [ ${#files[@]} -eq 0 ]; then
  echo "no files under tests/data/bad/model"
  exit 1
fi
for file in "${files[@]}"; do
  case "$file" in
    *.json)
      if [ ! -f "$file.expect" ]; then
        fail "$file" "missing $file.expect"
        continue
      fi
      expected=$(head -n 1 "$file.expect")
      ;;
    *)
      first=$(head -n 1 "$file")
      if [ "${first#\# expect: }" = "$first" ]; then
        fail "$file" "first line is not '# expect: ...'"
        continue
      fi
      expected=${first#\# expect: }
      ;;
  esac
  stderr=$("$muonplan" inspect --model "$file" 2>&1 >/dev/null)
  rc=$?
  if [ $rc -ne 2 ]; then
    fail "$file" "exit code $rc, expected 2 (stderr: $stderr)"
  elif [ "$stderr" != "$expected" ]; then
    fail "$file" "stderr differs"
    echo "  expected: $expected"
    echo "  got:      $stderr"
  else
    passed=$((passed + 1))
  fi
done

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
