#!/usr/bin/env bash
# Output files (docs/reliability.md, "Input and output files"): a write that fails (/dev/full,
# a full file system, a write past `ulimit -f`) exits 1 with one line naming the path and leaves
# no truncated file (a failed checkpoint save, no DIR.tmp); a failed command leaves an existing
# output byte-identical. SIGXFSZ is ignored, so a write past `ulimit -f` is EFBIG, not a kill.
# The full file system is a 16 KiB tmpfs in a private mount namespace (`unshare -m`, root):
# skipped, with a notice, without it.
set -u
source "$(dirname "$0")/lib.sh"
EXPECT_MATCH=suffix 
full="cannot write /dev/full: No space left on device"
M=models/qwen3-8b.yaml
expect "plan --out /dev/full" 1 "muonplan: error: $full" "$bin" plan --model $M --out /dev/full

# A failed plan leaves an existing --out as it was.
"$bin" plan --model $M --out "$work/p.json" >/dev/null || bad "plan --out"
cp "$work/p.json" "$work/p.before"
expect "plan --owners x" 2 "--owners: expected padded, restart, round-robin or balanced, got 'x'" \
  "$bin" plan --model $M --owners x --out "$work/p.json"
expect "plan --topology missing" 2 "missing.yaml: file: cannot be read" \
  "$bin" plan --model models/qwen3-30b-a3b.yaml --topology missing.yaml --out "$work/p.json"
cmp -s "$work/p.json" "$work/p.before" && ok || bad "a failed plan changed its --out file"
[ -z "$(find "$work" -name '.*.tmp.*')" ] && ok || bad "temporary files left: $(ls -A "$work")"

# execute --metrics (rank 0 of a single process) and calibrate --out on /dev/full.
"$bin" plan --model tests/data/micro-dense.yaml --topology topologies/cpu-ci.yaml --nodes 1 \
  --gpus-per-node 1 --offload none --out "$work/micro.json" >/dev/null || bad "micro plan"
expect "execute --metrics /dev/full" 1 "muonplan: rank 0: error: $full" \
  "$bin" execute --plan "$work/micro.json" --steps 1 --metrics /dev/full
cal=tests/data/calibration/cpu
# (One run fits more constants than it has figures: warning lines come first; --force writes
# the underdetermined fit.)
"$bin" calibrate --topology topologies/cpu-ci.yaml --metrics $cal/dense-none.metrics.json \
  --force --out /dev/full >/dev/null 2>"$work/err"; rc=$?
[ $rc = 1 ] && [ "$(tail -1 "$work/err")" = "muonplan: error: $full" ] \
  && [ "$(grep -vc '^warning: ' "$work/err")" = 1 ] && ok || bad "calibrate --out /dev/full: exit $rc: $(cat "$work/err")"

# Writes past `ulimit -f`: EFBIG, exit 1, stderr exactly the one line naming the file (not only
# its end, as matched above), and no file left.
T="--topology topologies/cpu-ci.yaml"
plan_tiny "$work/tiny.json" 2>"$work/err" || bad "plan: $(cat "$work/err")"
EXPECT_MATCH=exact expect "plan --out past ulimit -f" 1 "muonplan: error: cannot write $work/big.json: File too large" \
  bash -c 'ulimit -f 8; exec "$@"' _ "$bin" plan --model models/tiny-dense.yaml $T --nodes 1 \
  --gpus-per-node 1 --out "$work/big.json"
[ -z "$(ls -A "$work" | grep big.json)" ] && ok || bad "plan --out left $(ls -A "$work" | grep big.json)"
EXPECT_MATCH=exact expect "checkpoint past ulimit -f" 1 "muonplan: rank 0: error: checkpoint $work/fz: $work/fz.tmp/rank-00000.safetensors: write failed: File too large" \
  bash -c 'ulimit -f 1000; exec "$@"' _ "$bin" execute --plan "$work/tiny.json" --checkpoint "$work/fz"
[ ! -e "$work/fz.tmp" ] && [ ! -e "$work/fz" ] && ok || bad "a failed save left $work/fz.tmp"

# A full file system: no truncated file, no temporary left, an older file untouched.
mkdir "$work/dir"
if ! unshare -m sh -c "mount -t tmpfs -o size=16k tmpfs '$work/dir'" 2>/dev/null; then
  echo "SKIP: a full file system (needs unshare -m and mount as root)"
else
  "$bin" report --model models/glm-4.5-air.yaml --nodes 1..2 --out "$work/r" >/dev/null 2>&1 ||
    bad "report"
  data_kib=$(( $(stat -c %s "$work/r/report-data.json") / 1024 + 8 ))
  # Inside the namespace: each check prints one line, "ok" or what went wrong.
  unshare -m bash -s "$bin" "$work" "$data_kib" >"$work/ns.log" 2>&1 <<'EOF'
bin="$1"; work="$2"; data_kib="$3"; d="$work/dir"
say() { echo "$*" | tr '\n' ' ' | head -c 300; echo; }  # one line each
mount -t tmpfs -o size=16k tmpfs "$d" || exit 1
"$bin" plan --model models/kimi-k2.yaml --out "$d/plan.json" >/dev/null 2>"$work/e"
rc=$?; err="$(cat "$work/e")"
[ "$rc" = 1 ] && [ "$err" = "muonplan: error: cannot write $d/plan.json: No space left on device" ] \
  && say ok || say "plan into a full tmpfs: exit $rc, $err"
[ -z "$(ls -A "$d")" ] && say ok || say "files left in the full tmpfs: $(ls -A "$d")"
echo old >"$d/plan.json"
"$bin" plan --model models/kimi-k2.yaml --out "$d/plan.json" >/dev/null 2>&1
[ "$(cat "$d/plan.json")" = old ] && say ok || say "a failed write changed the older plan.json"
rm "$d/plan.json"
"$bin" report --model models/glm-4.5-air.yaml --nodes 1..2 --out "$d/r" >/dev/null 2>"$work/e"
rc=$?; err="$(cat "$work/e")"
[ "$rc" = 1 ] && [ "$err" = "muonplan: error: cannot write $d/r/report-data.json: No space left on device" ] \
  && say ok || say "report into a full tmpfs: exit $rc, $err"
# Room for report-data.json, not for the plots: report.py fails with one line, exit 1.
umount "$d" && mount -t tmpfs -o size=${data_kib}k tmpfs "$d" || exit 1
"$bin" report --model models/glm-4.5-air.yaml --nodes 1..2 --out "$d/r" >/dev/null 2>"$work/e"
rc=$?; err="$(cat "$work/e")"
[ "$rc" = 1 ] && [ "$(wc -l <"$work/e")" = 1 ] &&
  [[ "$err" == *"report.py: cannot write $d/r/"*".png: No space left on device" ]] \
  && say ok || say "report plots into a full tmpfs: exit $rc, $err"
[ -z "$(find "$d" -name '.*.tmp.*')" ] && say ok || say "temporary files left: $(ls -A "$d/r")"
EOF
  [ "$(grep -c . "$work/ns.log")" = 6 ] || bad "full file system: $(cat "$work/ns.log")"
  while read -r line; do [ "$line" = ok ] && ok || bad "full file system: $line"; done <"$work/ns.log"
fi
finish
