#!/usr/bin/env bash
# Checkpoints and bad input under mpiexec: 2 steps + save + resume 2 steps equals 4 steps
# (fp32 and bf16 momentum); a NaN gradient stops every rank with the parameter and step named
# (or is skipped with --skip-nonfinite); a plan for another world size, a plan of another
# schema and a damaged or missing checkpoint are refused on every rank with one line and exit 2,
# without a hang; a checkpoint of another world size resumes.
source "$(dirname "$0")/lib.sh"
W=3
for extra in "" "--bf16-momentum"; do
  plan "$work/p.json" tiny-moe $W $extra
  full="$(run $W "$work/p.json" --steps 4)" || bad "4 steps: $(cat "$work/err")"
  run $W "$work/p.json" --steps 2 --checkpoint "$work/ck" >/dev/null || bad "save: $(cat "$work/err")"
  half="$(run $W "$work/p.json" --steps 2 --resume "$work/ck")" || bad "resume: $(cat "$work/err")"
  [ "$(field "$half" last_step)" = 4 ] && ok || bad "resumed run ends at step $(field "$half" last_step)"
  [ "$(field "$half" measured.state_digest)" = "$(field "$full" measured.state_digest)" ] && ok \
    || bad "resume $extra: digest differs from 4 uninterrupted steps"
  rm -rf "$work/ck"
done

plan "$work/p.json" tiny-dense $W
# NaN in a gradient: every rank exits 1 naming the parameter and the step.
if run $W "$work/p.json" --steps 2 --inject-nonfinite model.layers.1.mlp.down_proj.weight:2 >/dev/null; then
  bad "NaN gradient accepted"
else
  n="$(grep -c "non-finite gradient in model.layers.1.mlp.down_proj.weight at step 2" "$work/err")"
  [ "$n" = $W ] && ok || bad "NaN message on $n of $W ranks: $(cat "$work/err")"
fi
m="$(run $W "$work/p.json" --steps 2 --skip-nonfinite --inject-nonfinite model.norm.weight:2)" \
  && [ "$(field "$m" measured.steps_skipped)" = 1 ] && ok || bad "--skip-nonfinite"

# A plan for 3 ranks run on 2.
if run 2 "$work/p.json" >/dev/null; then bad "world mismatch accepted"; else
  n="$(grep -c "plan world_size 3 differs from the 2 ranks running it: launch it as mpirun -np 3 muonplan execute ...$" "$work/err")"
  [ "$n" = 2 ] && ok || bad "world mismatch message on $n of 2 ranks: $(cat "$work/err")"
fi
# Another schema version.
sed 's/"muonplan.plan\/2"/"muonplan.plan\/9"/' "$work/p.json" > "$work/p9.json"
if run $W "$work/p9.json" >/dev/null; then bad "schema 9 accepted"; else
  n="$(grep -c "schema: expected muonplan.plan/2, got 'muonplan.plan/9'" "$work/err")"
  [ "$n" = $W ] && ok || bad "schema message on $n ranks: $(cat "$work/err")"
fi
# A refused checkpoint is bad input: exit 2 (it was 1), one line per rank. A truncated rank
# file: every rank reads every rank file's header (to find the rows it needs), so every rank
# names the file.
run $W "$work/p.json" --steps 1 --checkpoint "$work/ck" >/dev/null || bad "save for damage test"
cp -r "$work/ck" "$work/ck-world"
truncate -s 100 "$work/ck/rank-00001.safetensors"
run $W "$work/p.json" --resume "$work/ck" >/dev/null
rc=$?
n="$(grep -c "^muonplan: rank [012]: $work/ck/rank-00001.safetensors: truncated or extended: 100 bytes" "$work/err")"
if [ $rc = 2 ] && [ "$n" = $W ]; then ok
else bad "truncated checkpoint: exit $rc (want 2): $(cat "$work/err")"; fi
# A flipped byte that only the ranks reading those rows find: every rank prints the cause
# they found (the first line of stderr is the cause on every run, never a peer's "could not
# be loaded on rank R"), exit 2; repeated, since which rank's line comes first varies.
cp -r "$work/ck-world" "$work/ck-flip"
"$py" -c "
f = open('$work/ck-flip/rank-00001.safetensors', 'r+b'); f.seek(-5, 2); b = f.read(1); f.seek(-5, 2)
f.write(bytes([b[0] ^ 16]))"
cause="$work/ck-flip/rank-00001.safetensors: checksum mismatch: fnv1a-64 "
for i in 1 2 3 4; do
  run $W "$work/p.json" --resume "$work/ck-flip" >/dev/null
  rc=$?
  n="$(grep -c "^muonplan: rank [012]: $cause" "$work/err")"
  if [ $rc = 2 ] && [ "$n" = $W ] && head -1 "$work/err" | grep -q "^muonplan: rank [012]: $cause"; then ok
  else bad "flipped checkpoint, run $i: exit $rc (want 2): $(cat "$work/err")"; fi
done
# A missing checkpoint: every rank says that nothing is there.
run $W "$work/p.json" --resume "$work/nothing" >/dev/null
rc=$?
n="$(grep -c ": $work/nothing: no checkpoint there (no such directory, nor $work/nothing.tmp or $work/nothing.old)$" "$work/err")"
[ $rc = 2 ] && [ "$n" = $W ] && ok || bad "missing checkpoint: exit $rc (want 2): $(cat "$work/err")"
# A checkpoint of another world size loads (docs/checkpoint-format.md, "Loading"): step 1 on 3
# ranks, step 2 on 2 ranks ends where 2 steps on 3 ranks end (tests/mpi/checkpoint_reshard.sh
# crosses layouts and offload modes).
two="$(run $W "$work/p.json" --steps 2)" || bad "2 steps: $(cat "$work/err")"
plan "$work/p2.json" tiny-dense 2
m="$(run 2 "$work/p2.json" --steps 1 --resume "$work/ck-world")" || bad "3 -> 2 ranks: $(cat "$work/err")"
[ "$(field "$m" measured.state_digest)" = "$(field "$two" measured.state_digest)" ] && ok \
  || bad "checkpoint of 3 ranks resumed on 2: digest differs from 2 steps on 3"
finish
