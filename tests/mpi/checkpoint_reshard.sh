#!/usr/bin/env bash
# Checkpoints move between plans (docs/checkpoint-format.md, "Loading"): tiny-moe, 1 step on 4
# ranks, then 1 step resumed on 2 ranks, on 2 ranks with optimizer offload and on 4 ranks with
# fsdp=2,ep=2 (experts on other ranks, HSDP replicas) ends in the state_digest of 2 steps on 4
# ranks; a `full` checkpoint resumed under `full` on 2 replicated ranks ends where 2 steps of
# `full` on 4 end. fp32 momentum resumes as bf16; bf16 momentum resumed as fp32 and a
# checkpoint of another model are refused on every rank (exit 2), naming the entry or tensor.
source "$(dirname "$0")/lib.sh"
# pl OUT WORLD OFFLOAD [flags...]: tiny-moe for WORLD CPU ranks.
pl() {
  local out="$1" world="$2" mode="$3"; shift 3
  "$bin" plan --model models/tiny-moe.yaml --topology topologies/cpu-ci.yaml --nodes 1 \
    --gpus-per-node "$world" --offload "$mode" --out "$out" "$@" >/dev/null || bad "plan $*"
}
digest() { field "$1" measured.state_digest; }
pl "$work/p4.json" 4 none
pl "$work/p2.json" 2 none
pl "$work/p2opt.json" 2 optimizer
pl "$work/p4ep.json" 4 none --layout fsdp=2,ep=2
pl "$work/p2bf.json" 2 none --bf16-momentum

two="$(run 4 "$work/p4.json" --steps 2)" || bad "2 steps on 4 ranks: $(cat "$work/err")"
run 4 "$work/p4.json" --steps 1 --checkpoint "$work/ck4" >/dev/null || bad "save: $(cat "$work/err")"
[ "$(ls "$work/ck4" | tr '\n' ' ')" = "manifest.json rank-00000.safetensors rank-00001.safetensors rank-00002.safetensors rank-00003.safetensors " ] \
  && ok || bad "checkpoint files: $(ls "$work/ck4")"
for target in "2 p2" "2 p2opt" "4 p4ep"; do
  set -- $target
  m="$(run "$1" "$work/$2.json" --steps 1 --resume "$work/ck4")" ||
    { bad "resume on $2: $(cat "$work/err")"; continue; }
  [ "$(field "$m" first_step)" = 2 ] && [ "$(digest "$m")" = "$(digest "$two")" ] && ok ||
    bad "4 ranks -> $2: step $(field "$m" first_step), digest $(digest "$m"), want $(digest "$two")"
done

# `full` offload across world sizes and layouts: 4 ranks to 2 ranks holding every non-expert
# tensor whole (fsdp=1: replicas, loaded from rank 0's file only).
pl "$work/f4.json" 4 full
pl "$work/f2.json" 2 full --layout fsdp=1
f2="$(run 4 "$work/f4.json" --steps 2)" || bad "full 2 steps: $(cat "$work/err")"
run 4 "$work/f4.json" --steps 1 --checkpoint "$work/ckf" >/dev/null || bad "save full: $(cat "$work/err")"
m="$(run 2 "$work/f2.json" --steps 1 --resume "$work/ckf")" || bad "full -> full: $(cat "$work/err")"
[ "$(digest "$m")" = "$(digest "$f2")" ] && ok || bad "full@4 -> full@2 fsdp=1: digest differs"

# fp32 momentum into bf16 loads (rounded); that bf16 checkpoint into fp32 is refused.
run 2 "$work/p2bf.json" --steps 1 --resume "$work/ck4" --checkpoint "$work/ckbf" >/dev/null &&
  ok || bad "fp32 -> bf16 momentum: $(cat "$work/err")"
run 4 "$work/p4.json" --steps 1 --resume "$work/ckbf" >/dev/null
rc=$?
n="$(grep -c "^muonplan: rank [0-3]: $work/ckbf/rank-0000[01].safetensors: model.layers.0.self_attn.qkv_proj.weight/momentum: bf16 in the checkpoint, fp32 in this plan" "$work/err")"
[ $rc = 2 ] && [ "$n" = 4 ] && ok || bad "bf16 -> fp32: exit $rc (want 2): $(cat "$work/err")"

# Another model: tiny-dense has q/k norms that tiny-moe lacks; its embedding is the same.
plan "$work/dense.json" tiny-dense 2
run 2 "$work/dense.json" --steps 1 --resume "$work/ck4" >/dev/null
rc=$?
n="$(grep -c "^muonplan: rank [01]: $work/ck4/manifest.json: tensors: the checkpoint is of another model: model.layers.0.self_attn.q_norm.weight is not in it" "$work/err")"
[ $rc = 2 ] && [ "$n" = 2 ] && ok || bad "another model: exit $rc (want 2): $(cat "$work/err")"
finish
