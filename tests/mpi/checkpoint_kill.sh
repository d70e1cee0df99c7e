#!/usr/bin/env bash
# Crash-safe checkpoints: a save killed with SIGKILL at 20 of its save points (every write,
# fsync, close, mkdir, rename and remove is one; MUONPLAN_TEST_KILL_SAVE_AT=N kills before the
# N-th) leaves a checkpoint that loads: the previous one when the kill came before the save's
# first rename, the new one after it. A resumed run from it reaches the state_digest of an
# uninterrupted run, and its own save clears the crash's leftovers. A flipped byte in a rank
# file is refused naming the file (a truncated one: resume_and_errors.sh).
source "$(dirname "$0")/lib.sh"
W=1
# A model like tiny-dense, smaller still: 42 runs stay within a minute on two shared cores.
"$bin" plan --model tests/data/micro-dense.yaml --topology topologies/cpu-ci.yaml --nodes 1 \
  --gpus-per-node $W --offload none --out "$work/p.json" >/dev/null || bad "plan"
# One process without a launcher (MPI's singleton mode, without its helper daemon): the kill
# hits the saving process itself, and no launcher spends seconds tearing the job down after
# each kill. One OpenMP thread: results do not depend on it, and idle threads would spin.
export OMPI_MCA_ess_singleton_isolated=1 OMP_NUM_THREADS=1
# (In a subshell, so that the shell's "Killed" notice stays out of the log.)
run() { shift; ("$bin" execute --plan "$@" --json 2>"$work/err"; exit $?) 2>/dev/null; }
declare -A ref
for k in 3 4; do
  m="$(run $W "$work/p.json" --steps $k)" || bad "$k steps: $(cat "$work/err")"
  ref[$k]="$(field "$m" measured.state_digest)"
done
# The previous checkpoint: step 2. The save under test resumes it, runs step 3 and saves.
run $W "$work/p.json" --steps 2 --checkpoint "$work/base" >/dev/null || bad "save: $(cat "$work/err")"

# Number the save points once.
cp -r "$work/base" "$work/list"
MUONPLAN_TEST_KILL_SAVE_AT=list run $W "$work/p.json" --steps 1 --resume "$work/list" \
  --checkpoint "$work/list" >/dev/null || bad "listing save points: $(cat "$work/err")"
grep "rank 0: save point" "$work/err" > "$work/points"
total="$(wc -l < "$work/points")"
# The first rename moves the previous checkpoint aside: kills up to it leave it in place.
aside="$(grep -n " -> $work/list.old\$" "$work/points" | cut -d: -f1)"
[ "$total" -ge 20 ] && [ -n "$aside" ] && ok || bad "only $total save points, rename aside at '$aside'"
# 20 points: the start of the save, two in the middle of the rank file, and the last 14
# (end of the rank file, manifest, renames, syncs, removal of the previous checkpoint).
points="1 2 3 4 $((total / 2)) $((total / 2 + 1)) $(seq $((total - 13)) "$total")"
old=0 new=0
for n in $points; do
  d="$work/ck$n"
  cp -r "$work/base" "$d"
  if MUONPLAN_TEST_KILL_SAVE_AT=$n run $W "$work/p.json" --steps 1 --resume "$d" \
      --checkpoint "$d" >/dev/null; then
    bad "save point $n: the save was not killed"
    continue
  fi
  grep -q "save point $n: .*(test hook: SIGKILL)" "$work/err" || bad "save point $n: $(cat "$work/err")"
  m="$(run $W "$work/p.json" --steps 1 --resume "$d" --checkpoint "$d")" ||
    { bad "save point $n: resume refused: $(cat "$work/err")"; continue; }
  last="$(field "$m" last_step)"
  want=3 && [ "$n" -gt "$aside" ] && want=4
  if [ "$last" = "$want" ] && [ "$(field "$m" measured.state_digest)" = "${ref[$want]}" ]; then
    ok
  else
    bad "save point $n ($(sed -n "${n}p" "$work/points")): resumed to step $last," \
      "digest $(field "$m" measured.state_digest), want step $want ${ref[$want]}"
  fi
  [ "$last" = 3 ] && old=$((old + 1)) || new=$((new + 1))
  [ ! -e "$d.tmp" ] && [ ! -e "$d.old" ] && ok || bad "save point $n: leftovers after the next save"
  rm -rf "$d" "$d.tmp" "$d.old"
done
echo "killed at save points" $points "of $total: $old left the previous checkpoint, $new the new one"

# A flipped byte in the middle of a rank file: refused, naming the file.
cp -r "$work/base" "$work/flip"
"$py" - "$work/flip/rank-00000.safetensors" <<'EOF'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(0, 2); n = f.tell(); f.seek(n // 2); b = f.read(1); f.seek(n // 2)
    f.write(bytes([b[0] ^ 0x10]))
EOF
if run $W "$work/p.json" --resume "$work/flip" >/dev/null; then bad "flipped byte accepted"; else
  grep -q "$work/flip/rank-00000.safetensors: checksum mismatch" "$work/err" && ok ||
    bad "flipped byte message: $(cat "$work/err")"
fi
finish
