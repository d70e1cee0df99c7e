#!/usr/bin/env bash
# Where and when muonplan report writes (docs/report.md, "Where it writes"; docs/reliability.md):
#   --out DIR:  only a new or empty directory, or one muonplan wrote (marker .muonplan-report); a
#               user's report.md is left as it was, a link inside DIR is refused, never written
#               through, and so is an input (--metrics) inside DIR
#   failure:    a report that fails half-way leaves DIR as it was, and no staging directory
#   SIGTERM:    report.py is ended with the command (exit 143), and nothing is written
set -u
source "$(dirname "$0")/lib.sh"
T="--topology topologies/cpu-ci.yaml"

# --- Report directories -----------------------------------------------------------------------
refusal="muonplan writes a report only into a new or empty directory, or one it wrote: give another --out"
mkdir "$work/mine"; echo "my notes" > "$work/mine/report.md"
expect "report into a user's directory" 2 "--out: $work/mine holds files muonplan did not write (report.md); $refusal" \
  "$bin" report --model models/tiny-dense.yaml --nodes 1 --out "$work/mine"
[ "$(cat "$work/mine/report.md")" = "my notes" ] && ok || bad "report overwrote a user's report.md"
"$bin" report --model models/tiny-dense.yaml --nodes 1 --out "$work/rep" >/dev/null 2>"$work/err" \
  && [ -f "$work/rep/.muonplan-report" ] && ok || bad "report into a new directory: $(cat "$work/err")"
echo secret > "$work/target.txt"; ln -s ../target.txt "$work/rep/report-data.json.link"
expect "report with a link inside" 2 "--out: $work/rep holds report-data.json.link, which is not a regular file; $refusal" \
  "$bin" report --model models/tiny-dense.yaml --nodes 1 --out "$work/rep"
[ "$(cat "$work/target.txt")" = secret ] && ok || bad "report wrote through a link"
rm "$work/rep/report-data.json.link"; cp "$work/rep/report.md" "$work/rep-before.md"
# A report that fails half-way leaves its directory as it was, and no staging directory.
MUONPLAN_REPORT_PYTHON=/bin/false "$bin" report --model models/qwen3-8b.yaml --nodes 1 \
  --out "$work/rep" >/dev/null 2>&1 && bad "a failing report.py exited 0"
cmp -s "$work/rep/report.md" "$work/rep-before.md" && [ -z "$(ls -A "$work" | grep '^\.rep\.')" ] \
  && ok || bad "a failed report changed its directory or left a staging directory"
"$bin" report --model models/qwen3-8b.yaml --nodes 1 --out "$work/rep" >/dev/null 2>"$work/err" \
  && grep -q qwen3-8b "$work/rep/report.md" && ok || bad "a second report into its own directory: $(cat "$work/err")"
# An input inside --out is refused before anything is written: the report replaces the
# directory's contents, the metrics file among them.
mkdir "$work/with-input"; cp tests/data/calibration/cpu/dense-none.metrics.json "$work/with-input/m.json"
expect "report's --metrics inside --out" 2 "--out: $work/with-input holds --metrics ($work/with-input/m.json), and the command replaces its contents" \
  "$bin" report --model models/tiny-dense.yaml $T --nodes 1..2 --out "$work/with-input" --metrics "$work/with-input/m.json"
cmp -s "$work/with-input/m.json" tests/data/calibration/cpu/dense-none.metrics.json && ok \
  || bad "the metrics inside --out changed"

# --- SIGTERM to report ends report.py first ---------------------------------------------------
# The signal comes while report.py runs, whatever the machine's speed: a stand-in for python
# says it has started, then runs until it is ended (the report is staged in $work/.rt.report.PID
# until report.py has finished).
cat >"$work/slow-python" <<EOF
#!/bin/sh
: >"$work/python-started"
exec /usr/bin/python3 -c 'import time; time.sleep(3600)' "\$@"
EOF
chmod +x "$work/slow-python"
MUONPLAN_REPORT_PYTHON="$work/slow-python" "$bin" report --model tests/data/micro-dense.yaml $T \
  --nodes 1 --out "$work/rt" >/dev/null 2>&1 &
pid=$!
# Hang guard only (60 s): the file appears once report.py has started.
for _ in $(seq 1200); do [ -e "$work/python-started" ] && break; sleep 0.05; done
kill -TERM "$pid"; wait "$pid"; rc=$?
left="$(ps -eo args | grep -F "$work/" | grep report.py | grep -v grep)"
[ "$rc" = 143 ] && [ -z "$left" ] && ok || bad "report after SIGTERM: exit $rc, still running: $left"
# Nothing written, and the staging directory removed.
[ ! -e "$work/rt" ] && [ -z "$(ls -A "$work" | grep '^\.rt\.report')" ] && ok \
  || bad "report after SIGTERM left: $(ls -A "$work" "$work/rt" 2>&1 | tr '\n' ' ')"

finish
