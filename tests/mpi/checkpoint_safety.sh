#!/usr/bin/env bash
# A save replaces only its own checkpoints (issue "never destroy a user's files", items 1-2):
# whatever else sits at DIR, DIR.tmp or DIR.old (a directory of user files, a regular file, the
# plan itself, a symbolic link, a checkpoint with a stranger's file in it) is refused before the
# first step with exit 2, naming the path, and left exactly as it was. Two runs writing one
# checkpoint: the second is refused at start naming the first's PID (flock on DIR.lock), and
# a second run started while the first is stopped at a named point of its save leaves the
# checkpoint loadable.
source "$(dirname "$0")/lib.sh"
W=1
"$bin" plan --model tests/data/micro-dense.yaml --topology topologies/cpu-ci.yaml --nodes 1 \
  --gpus-per-node $W --offload none --out "$work/p.json" >/dev/null || bad "plan"
# One process without a launcher (as checkpoint_kill.sh); one OpenMP thread.
export OMPI_MCA_ess_singleton_isolated=1 OMP_NUM_THREADS=1
ex() { "$bin" execute --plan "$work/p.json" --json "$@" 2>"$work/err"; }
# Everything under $work but the runs' own stderr files.
snapshot() {
  (cd "$1" && find . -not -name 'err*' -printf '%p %s %y\n' | sort &&
    find . -type f -not -name 'err*' -exec md5sum {} + | sort)
}

# refused TARGET_PATH CHECKPOINT_ARG: exit 2, one line naming TARGET_PATH, nothing changed.
refused() {
  local target="$1" arg="$2" before after rc
  before="$(snapshot "$work")"
  ex --steps 1 --checkpoint "$arg" >/dev/null; rc=$?
  after="$(snapshot "$work")"
  [ "$rc" = 2 ] || { bad "$arg: exit $rc, want 2: $(cat "$work/err")"; return; }
  grep -q "^muonplan: .*$target: --checkpoint: " "$work/err" && [ "$(wc -l < "$work/err")" = 1 ] &&
    ok || bad "$arg: message does not name $target: $(cat "$work/err")"
  [ "$before" = "$after" ] && ok || bad "$arg: files changed"
}

mkdir -p "$work/important/sub"; echo x > "$work/important/notes.txt"
refused "$work/important" "$work/important"
refused "$work/important" "$work/important/"
# The plan itself: refused with the other path clashes, before any rank starts (cli/paths.cc).
before="$(snapshot "$work")"
ex --steps 1 --checkpoint "$work/p.json" >/dev/null; rc=$?
[ "$rc" = 2 ] && [ "$(cat "$work/err")" = "--checkpoint: $work/p.json is the path of --plan ($work/p.json), an input; write it elsewhere" ] \
  && [ "$before" = "$(snapshot "$work")" ] && ok || bad "--checkpoint onto the plan: exit $rc: $(cat "$work/err")"
ln -s "$work/important" "$work/link"; refused "$work/link" "$work/link"

# A user's directory at DIR.tmp or DIR.old, beside a DIR that does not exist yet.
mkdir -p "$work/a.tmp"; echo mine > "$work/a.tmp/data"
refused "$work/a.tmp" "$work/a"; rm -rf "$work/a.tmp"
mkdir -p "$work/b.old"; echo mine > "$work/b.old/data"
refused "$work/b.old" "$work/b"; rm -rf "$work/b.old"

# A checkpoint of ours is replaced; with a stranger's file inside it is refused.
ex --steps 1 --checkpoint "$work/ck" >/dev/null && [ -f "$work/ck/manifest.json" ] && ok ||
  bad "first save: $(cat "$work/err")"
ex --steps 1 --resume "$work/ck" --checkpoint "$work/ck" >/dev/null &&
  [ "$(field "$(cat "$work/ck/manifest.json")" step)" = 2 ] && ok || bad "replacing our own: $(cat "$work/err")"
echo keep > "$work/ck/notes.txt"; refused "$work/ck" "$work/ck"; rm "$work/ck/notes.txt"
# A rank file that is not ours is not ours either: a legacy .bin without our magic, a
# safetensors file whose __metadata__ has no muonplan schema (another tool's), one that is not
# safetensors at all.
printf 'NOTMUONPLAN' > "$work/ck/rank-00007.bin"; refused "$work/ck" "$work/ck"; rm "$work/ck/rank-00007.bin"
"$py" - "$work/ck/rank-00007.safetensors" <<'EOF'
import json, struct, sys
h = json.dumps({"__metadata__": {"format": "pt"},
                "w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + b"\0" * 4)
EOF
refused "$work/ck" "$work/ck"; rm "$work/ck/rank-00007.safetensors"
printf 'NOTMUONPLAN' > "$work/ck/rank-00007.safetensors"; refused "$work/ck" "$work/ck"
rm "$work/ck/rank-00007.safetensors"
# A manifest.json of another program.
mkdir -p "$work/other"; echo '{"schema": "someone-else/1"}' > "$work/other/manifest.json"
refused "$work/other" "$work/other"
# A stale DIR.tmp of ours (a killed save) is cleaned by the next save.
# (A save killed after creating its rank file and before the first write leaves it empty.)
mkdir -p "$work/ck.tmp"; : > "$work/ck.tmp/rank-00000.safetensors"
ex --steps 1 --checkpoint "$work/ck" >/dev/null && [ ! -e "$work/ck.tmp" ] && ok ||
  bad "stale tmp of ours: $(cat "$work/err")"
# A DIR.lock that is not our lock file is refused, not overwritten.
echo "user data" > "$work/c.lock"; refused "$work/c.lock" "$work/c"; rm "$work/c.lock"

# Two runs on one checkpoint: the second is refused at start, naming the first's PID.
# The first stops itself at step 2 (the MUONPLAN_TEST_DIE hook's `stop`), holding the lock,
# until the second has been refused: no race on how long the first runs.
ex --steps 1 --checkpoint "$work/race" >/dev/null || bad "race base: $(cat "$work/err")"
MUONPLAN_TEST_DIE=0:2:stop "$bin" execute --plan "$work/p.json" --steps 3 \
  --checkpoint "$work/race" --json >/dev/null 2>"$work/err_a" &
a=$!
# Hang guard only (60 s): the line comes once the run reaches step 2.
for _ in $(seq 1200); do grep -q "test hook: SIGSTOP at step 2" "$work/err_a" && break; sleep 0.05; done
ex --steps 1 --checkpoint "$work/race" >/dev/null; rc=$?
[ "$rc" = 2 ] && grep -q "another run (pid $a) is writing this checkpoint" "$work/err" && ok ||
  bad "second run: exit $rc: $(cat "$work/err")"
kill -CONT $a
wait $a && ok || bad "first run: $(cat "$work/err_a")"
m="$(ex --steps 1 --resume "$work/race")" && [ "$(field "$m" first_step)" = 4 ] && ok ||
  bad "after the race: $(cat "$work/err")"

# The target is checked under the lock: while another run holds it, its DIR.tmp may look like
# anything (a save renames manifest.json.part while it is listed), and only the lock is named.
ex --steps 1 --checkpoint "$work/held" >/dev/null || bad "held base: $(cat "$work/err")"
mkdir -p "$work/held.tmp"; echo half > "$work/held.tmp/being-written"
# The holder is the sleep itself (the subshell execs it), so killing it releases the lock.
(flock 9 && exec sleep 3600) 9<"$work/held.lock" & holder=$!
for _ in $(seq 100); do flock -n "$work/held.lock" true || break; sleep 0.05; done
ex --steps 1 --checkpoint "$work/held" >/dev/null; rc=$?
[ "$rc" = 2 ] && grep -q "another run .* is writing this checkpoint" "$work/err" && ok ||
  bad "held lock, odd tmp: exit $rc: $(cat "$work/err")"
kill $holder; wait $holder 2>/dev/null; rm -rf "$work/held.tmp"

# Racing pairs as the review ran them, without the race: the first run stops itself at a named
# point of its save (MUONPLAN_TEST_STOP_SAVE_AT, the save points checkpoint_kill.sh kills at),
# the second starts while it is stopped and is refused by the lock, naming it; the first then
# goes on, and its checkpoint loads. The points: the save's start, its first write, the
# manifest's rename, the checkpoint's rename into place, and the last point.
MUONPLAN_TEST_KILL_SAVE_AT=list ex --steps 2 --checkpoint "$work/rl" >/dev/null ||
  bad "listing save points: $(cat "$work/err")"
grep "rank 0: save point" "$work/err" > "$work/points"
point() { grep -F "$1" "$work/points" | head -n 1 | sed 's/.*save point \([0-9]*\):.*/\1/'; }
named="$(point ": mkdir $work/rl.tmp") $(point ": header and step")
  $(point ": rename $work/rl.tmp/manifest.json.part -> ") $(point ": rename $work/rl.tmp -> $work/rl")
  $(wc -l < "$work/points")"
# shellcheck disable=SC2086
[ "$(echo $named | wc -w)" = 5 ] && ok || bad "save points not found: $named"
for n in $named; do
  MUONPLAN_TEST_STOP_SAVE_AT=$n "$bin" execute --plan "$work/p.json" --steps 2 \
    --checkpoint "$work/r$n" --json >/dev/null 2>"$work/ea" & a=$!
  # Hang guard only (60 s): the line comes once the save reaches point n.
  for _ in $(seq 1200); do grep -q "save point $n: .*(test hook: SIGSTOP)" "$work/ea" && break; sleep 0.05; done
  grep -q "save point $n: .*(test hook: SIGSTOP)" "$work/ea" && ok ||
    bad "point $n: the first run did not stop there: $(cat "$work/ea")"
  ex --steps 1 --checkpoint "$work/r$n" >/dev/null; rb=$?
  [ "$rb" = 2 ] && grep -q "another run (pid $a) is writing this checkpoint" "$work/err" && ok ||
    bad "point $n: second run: exit $rb: $(cat "$work/err")"
  kill -CONT $a
  wait $a && ok || bad "point $n: first run: $(cat "$work/ea")"
  m="$(ex --steps 1 --resume "$work/r$n")" && [ "$(field "$m" first_step)" = 3 ] && ok ||
    bad "point $n: unloadable: $(cat "$work/err")"
done
finish
