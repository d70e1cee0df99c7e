#!/usr/bin/env bash
# Sharded vs one rank: for world sizes 1, 2, 3, 4 and 8, the state digest equals the one-rank
# run's, and the all-to-all bytes each rank sends equal the planner's prediction exactly;
# tiny-dense runs with the plain options, tiny-moe with Nesterov, bf16 momentum and weight decay
# (the options are elementwise, the same on every shard; tiny-moe's plain options run in the
# layout cases below). Worlds 2, 3 and 4 run every owner strategy (2 and 3 since the CPU backend
# got faster, #24: CI's time went to coverage), world 8 two of them: the owner logic itself is
# unit-tested (tests/unit), and a strategy that mis-assigns shows up in the digest anywhere.
# The digest covers the whole state bit for bit, so equal digests mean equal updates; the
# unsharded recomputation (--check-reference, which every rank runs whole: W times the work)
# runs on the first strategy of each world, where it tests the reference path itself, and the
# independent reference step beside it (lib.sh's checked: one rank bit for bit, the
# reference within its bound).
# World 4 runs on the asynchronous-lanes backend (a seed per run): its digests, equal to one
# rank's on the CPU backend, also check the waits between lanes.
# MUONPLAN_TEST_QUICK=1 (sanitizer runs): worlds 1 and 4 (no rows divide by 4), owners
# round-robin and balanced, and one layout case, HSDP with expert parallelism.
source "$(dirname "$0")/lib.sh"
# world:strategies
cases=("1:balanced" "2:padded,round-robin,restart,balanced" "3:restart,balanced,padded,round-robin"
  "4:round-robin,padded,restart,balanced" "8:restart,round-robin")
layouts=("4 ep=2" "8 ep=2" "4 fsdp=2" "4 fsdp=2,ep=2" "3 fsdp=1")
if [ "$quick" = 1 ]; then
  cases=("1:balanced" "4:round-robin,balanced"); layouts=("4 fsdp=2,ep=2")
fi
for model in tiny-dense tiny-moe; do
  extra=""; [ "$model" = tiny-moe ] && extra="--nesterov --bf16-momentum --weight-decay 0.1"
  base=""
  for c in "${cases[@]}"; do
    world="${c%%:*}"; strategies="${c#*:}"; check="--check-reference"
    for owners in ${strategies//,/ }; do
      p="$work/p.json"
      plan "$p" "$model" "$world" --owners "$owners" $extra || { bad "plan $model $world"; continue; }
      # World 4 on the asynchronous-lanes backend (lib.sh's async), a seed per strategy.
      lanes=""; [ "$world" = 4 ] && { seed=$((${seed:-0} + 1)); lanes="$(async $seed)"; }
      m="$(run "$world" "$p" --steps 2 $check $lanes)" || { bad "run $model w$world $owners: $(cat "$work/err")"; continue; }
      what="$model w$world $owners $extra"
      if [ -n "$check" ]; then
        checked "$m" && ok || bad "$what: reference_rel_error $(field "$m" measured.reference_rel_error)"
      fi
      check=""
      digest="$(field "$m" measured.state_digest)"
      [ -z "$base" ] && base="$digest"
      [ "$digest" = "$base" ] && ok || bad "$what: digest $digest != one-rank $base"
      [ "$(field "$m" measured.alltoall_bytes_per_rank_max)" = "$(field "$m" predicted.alltoall_bytes_per_rank_max)" ] && ok \
        || bad "$what: bytes $(field "$m" measured.alltoall_bytes_per_rank_max) != predicted $(field "$m" predicted.alltoall_bytes_per_rank_max)"
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
  check=""; [ "$1" = 8 ] || check="--check-reference"  # 8 ranks: the digest alone (see above)
  m="$(run "$1" "$work/p.json" --steps 2 $check)" || { bad "w$1 $2: $(cat "$work/err")"; continue; }
  [ -z "$check" ] || { checked "$m" && ok || bad "w$1 $2: reference"; }
  [ "$(field "$m" measured.state_digest)" = "$one" ] && ok || bad "w$1 $2: digest differs from one rank"
  [ "$(field "$m" measured.alltoall_bytes_per_rank_max)" = "$(field "$m" predicted.alltoall_bytes_per_rank_max)" ] && ok || bad "w$1 $2: bytes"
done
finish
