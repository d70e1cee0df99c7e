#!/usr/bin/env bash
# Regenerates the README's "What the main job prints" block from the code: the output of the
# main job (scripts/plan.sh's command) with the data directory written as <data>. The block is
# never typed by hand; ctest (cli.readme_main_job) fails when the committed README is stale.
# Usage: scripts/gen-readme.sh [muonplan binary]   (--check: compare only, exit 1 when stale)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
check=0
[ "${1:-}" = --check ] && { check=1; shift; }
bin="${1:-$root/build/cli/muonplan}"
cd "$root"
# The main job's arguments, read from scripts/plan.sh so that the two cannot differ.
config="$(sed -n 's|^config="\$root/\(.*\)"$|\1|p' scripts/plan.sh)"
[ -n "$config" ] || { echo "gen-readme: no config= line in scripts/plan.sh" >&2; exit 2; }
out="$("$bin" plan --trainer-config "$config" --topology topologies/h200-ib.yaml |
  sed -E 's#read from [^ ]*/models/#read from <data>/models/#')"
new="$(OUT="$out" python3 - README.md <<'PY'
import os, sys
text = open(sys.argv[1]).read()
head = "## What the main job prints"
at = text.index(head)
start = text.index("```\n", at) + 4
end = text.index("```\n", start)
sys.stdout.write(text[:start] + os.environ["OUT"] + "\n" + text[end:])
PY
)"
if [ "$check" = 1 ]; then
  if [ "$new" = "$(cat README.md)" ]; then exit 0; fi
  diff <(printf '%s\n' "$new") README.md >&2 || true
  echo "README.md's main-job block is stale: run scripts/gen-readme.sh" >&2
  exit 1
fi
printf '%s\n' "$new" >README.md
