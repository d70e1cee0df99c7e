#!/usr/bin/env bash
# The offload pipelines under mpiexec (docs/muon-step.md section 5): `optimizer` offload, staged
# whole or by chunk, ends in the state digest of `none`; `full` offload matches its own
# unsharded recomputation bit for bit (both on the asynchronous-lanes backend, `none` on cpu, so
# the digests also check the waits between lanes); H2D bytes equal the planner's; checkpoints cross modes;
# Nesterov under `full` is refused on every rank; the symmetric NS variant runs sharded.
source "$(dirname "$0")/lib.sh"
W=4
# oplan OUT MODEL OFFLOAD [flags...]
oplan() {
  local out="$1" model="$2" mode="$3"; shift 3
  "$bin" plan --model "models/$model.yaml" --topology topologies/cpu-ci.yaml --nodes 1 \
    --gpus-per-node $W --offload "$mode" --out "$out" "$@" >/dev/null || bad "plan $mode $*"
}
digest() { field "$1" measured.state_digest; }

# tiny-moe with bf16 momentum, tiny-dense with fp32: each momentum dtype and each model once
# (the dtype changes what is staged and rounded, not where; the model, which chunks there are).
# MUONPLAN_TEST_QUICK=1 (sanitizer runs): tiny-moe alone; the rest as always.
cases=("tiny-moe --bf16-momentum" "tiny-dense")
[ "$quick" = 1 ] && cases=("tiny-moe --bf16-momentum")
seed=0  # of the asynchronous-lanes runs: one per run, across the cases
for case in "${cases[@]}"; do
  read -r model extra <<<"$case"
  oplan "$work/none.json" $model none $extra
  # Whole staging with pinned state (asynchronous copies), chunked with pageable state.
  oplan "$work/opt.json" $model optimizer --pinned-state $extra
  oplan "$work/optc.json" $model optimizer --offload-staging chunked $extra
  oplan "$work/full.json" $model full $extra
  # none and optimizer offload are judged by their digests (the digest is the whole state, and
  # sharded_vs_one_rank ties none's to the unsharded recomputation); full, which rounds
  # differently, by its own recomputation.
  # The offloaded runs on the asynchronous-lanes backend, a seed each (lib.sh's async): their
  # digests then also say that every wait between lanes is there, in every staging.
  ref="$(run $W "$work/none.json" --steps 3)" || bad "none: $(cat "$work/err")"
  for p in opt optc; do
    seed=$((seed + 1))
    # Chunked staging also against its recomputations (lib.sh's checked).
    check=""; [ $p = optc ] && check=--check-reference
    m="$(run $W "$work/$p.json" --steps 3 $check $(async $seed))" || bad "$p: $(cat "$work/err")"
    [ "$(digest "$m")" = "$(digest "$ref")" ] && ok \
      || bad "$model $extra $p: digest $(digest "$m") differs from none's $(digest "$ref")"
    [ -z "$check" ] || { checked "$m" && ok || bad "$model $extra optc: reference check"; }
    # Whole staging moves the whole state each way: the planner's figure, byte for byte.
    if [ $p = opt ]; then
      want="$(field "$(cat "$work/opt.json")" predicted.h2d_gb_per_gpu)"
      [ "$(field "$m" measured.h2d_gb_per_gpu)" = "$want" ] && ok \
        || bad "$model $extra optimizer: H2D $(field "$m" measured.h2d_gb_per_gpu) GB != planned $want"
    fi
  done
  seed=$((seed + 1))
  f="$(run $W "$work/full.json" --steps 3 --check-reference $(async $seed))" || bad "full: $(cat "$work/err")"
  checked "$f" && ok \
    || bad "$model $extra full: sharded vs unsharded error $(field "$f" measured.reference_rel_error)"
  [ "$(digest "$f")" != "$(digest "$ref")" ] && ok || bad "$model $extra full: no bf16 update rounding?"
  # H2D under full: bf16 momentum of every Muon element, then bf16 weights of every element.
  want="$(field "$(cat "$work/full.json")" predicted.h2d_gb_per_gpu)"
  [ "$(field "$f" measured.h2d_gb_per_gpu)" = "$want" ] && ok \
    || bad "$model $extra full: H2D $(field "$f" measured.h2d_gb_per_gpu) GB != planned $want"
done

# Checkpoints cross modes: none@2 resumed under optimizer ends where 3 steps of none end; full@2
# resumed under full ends where 3 steps of full end; full@2 resumed under none and under
# optimizer agree; none@2 resumes under full.
oplan "$work/none.json" tiny-moe none
oplan "$work/opt.json" tiny-moe optimizer
oplan "$work/full.json" tiny-moe full
n3="$(run $W "$work/none.json" --steps 3)" || bad "none 3 steps"
f3="$(run $W "$work/full.json" --steps 3)" || bad "full 3 steps"
run $W "$work/none.json" --steps 2 --checkpoint "$work/cn" >/dev/null || bad "save none"
# The full save and the optimizer resume on the asynchronous-lanes backend: their digests, equal
# to the CPU backend's 3 steps, say its full offload and resumed optimizer state are exactly cpu's.
run $W "$work/full.json" --steps 2 --checkpoint "$work/cf" $(async $((seed + 1))) >/dev/null || bad "save full"
m="$(run $W "$work/opt.json" --steps 1 --resume "$work/cn" $(async $((seed + 2))))" || bad "none -> optimizer: $(cat "$work/err")"
[ "$(digest "$m")" = "$(digest "$n3")" ] && ok || bad "none@2 -> optimizer: digest differs from none@3"
m="$(run $W "$work/full.json" --steps 1 --resume "$work/cf")" || bad "full -> full: $(cat "$work/err")"
[ "$(digest "$m")" = "$(digest "$f3")" ] && ok || bad "full@2 -> full: digest differs from full@3"
a="$(run $W "$work/none.json" --steps 1 --resume "$work/cf")" || bad "full -> none: $(cat "$work/err")"
b="$(run $W "$work/opt.json" --steps 1 --resume "$work/cf")" || bad "full -> optimizer: $(cat "$work/err")"
[ "$(digest "$a")" = "$(digest "$b")" ] && ok || bad "full@2 -> none and -> optimizer differ"
run $W "$work/full.json" --steps 1 --resume "$work/cn" >/dev/null && ok || bad "none -> full: $(cat "$work/err")"

# The symmetric-product NS variant: sharded equals its own unsharded recomputation, and the
# independent reference (plain NS) within its bound.
m="$(run $W "$work/none.json" --steps 2 --check-reference --symmetric-ns)" || bad "symmetric: $(cat "$work/err")"
checked "$m" && [ "$(field "$m" measured.ns_variant)" = symmetric ] \
  && ok || bad "symmetric NS: reference error $(field "$m" measured.reference_rel_error)"

# Nesterov under full offload: the planner refuses it, and the plan loader refuses a plan edited
# by hand on every rank (MuonStep refuses it too: tests/exec_step/offload_test.cc).
if "$bin" plan --model models/tiny-dense.yaml --topology topologies/cpu-ci.yaml --nodes 1 \
  --gpus-per-node $W --offload full --nesterov --out "$work/x.json" 2>"$work/err"; then
  bad "planner accepted Nesterov under full"
else grep -q "Nesterov momentum is not supported under full offload" "$work/err" && ok || bad "planner message"; fi
oplan "$work/f.json" tiny-dense full
sed 's/"nesterov": false/"nesterov": true/' "$work/f.json" > "$work/fn.json"
if run $W "$work/fn.json" --steps 1 >/dev/null; then bad "Nesterov under full accepted"; else
  n="$(grep -c "optimizer_config.nesterov: Nesterov momentum is not supported under full offload" "$work/err")"
  [ "$n" = $W ] && ok || bad "Nesterov message on $n of $W ranks: $(cat "$work/err")"
fi
finish
