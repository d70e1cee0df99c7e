#!/usr/bin/env bash
# Sharded vs one rank: for world sizes 1, 2, 3, 4 and 8, both tiny models, every owner
# strategy: the update equals the unsharded recomputation bit for bit (reference_rel_error 0),
# the state digest equals the one-rank run's, and the all-to-all bytes each rank sends equal
# the planner's prediction exactly.
# MUONPLAN_TEST_QUICK=1 (sanitizer runs): worlds 1 and 4 (no rows divide by 4), owners
# round-robin and balanced, and one layout case, HSDP with expert parallelism; both models and
# both option sets as always.
source "$(dirname "$0")/lib.sh"
worlds="1 2 3 4 8"; strategies="padded restart round-robin balanced"
layouts=("4 ep=2" "8 ep=2" "4 fsdp=2" "4 fsdp=2,ep=2" "3 fsdp=1")
if [ "$quick" = 1 ]; then
  worlds="1 4"; strategies="round-robin balanced"; layouts=("4 fsdp=2,ep=2")
fi
for model in tiny-dense tiny-moe; do
  for extra in "" "--nesterov --bf16-momentum --weight-decay 0.1"; do
    base=""
    for world in $worlds; do
      for owners in $strategies; do
        [ "$world" = 1 ] && [ "$owners" != balanced ] && continue
        p="$work/p.json"
        plan "$p" "$model" "$world" --owners "$owners" $extra || { bad "plan $model $world"; continue; }
        m="$(run "$world" "$p" --steps 2 --check-reference)" || { bad "run $model w$world $owners: $(cat "$work/err")"; continue; }
        what="$model w$world $owners $extra"
        [ "$(field "$m" measured.reference_rel_error)" = "0.0" ] && ok || bad "$what: reference_rel_error $(field "$m" measured.reference_rel_error)"
        digest="$(field "$m" measured.state_digest)"
        [ -z "$base" ] && base="$digest"
        [ "$digest" = "$base" ] && ok || bad "$what: digest $digest != one-rank $base"
        [ "$(field "$m" measured.alltoall_bytes_per_rank_max)" = "$(field "$m" predicted.alltoall_bytes_per_rank_max)" ] && ok \
          || bad "$what: bytes $(field "$m" measured.alltoall_bytes_per_rank_max) != predicted $(field "$m" predicted.alltoall_bytes_per_rank_max)"
      done
    done
  done
done
# Expert parallelism (experts local and whole), HSDP replicas (fsdp < world) and a replicated
# layout (fsdp=1): the same digest as one rank, the replicas counted once.
plan "$work/p.json" tiny-moe 1
one="$(field "$(run 1 "$work/p.json" --steps 2)" measured.state_digest)"
for case in "${layouts[@]}"; do
  set -- $case
  plan "$work/p.json" tiny-moe "$1" --layout "$2"
  m="$(run "$1" "$work/p.json" --steps 2 --check-reference)" || { bad "w$1 $2: $(cat "$work/err")"; continue; }
  [ "$(field "$m" measured.reference_rel_error)" = "0.0" ] && ok || bad "w$1 $2: reference"
  [ "$(field "$m" measured.state_digest)" = "$one" ] && ok || bad "w$1 $2: digest differs from one rank"
  [ "$(field "$m" measured.alltoall_bytes_per_rank_max)" = "$(field "$m" predicted.alltoall_bytes_per_rank_max)" ] && ok || bad "w$1 $2: bytes"
done
finish
