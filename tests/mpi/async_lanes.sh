#!/usr/bin/env bash
# Stream races caught on the CPU (docs/executor.md, "Lanes"). `--backend cpu-async` runs each
# lane as its own queue and thread, with seeded random delays; offload_modes.sh and
# sharded_vs_one_rank.sh run part of their matrices on it (every offload mode and staging, world
# 4 under every owner strategy) against the CPU backend's digests. Here: that it catches a
# missing wait, and the host-staged all-to-all. With long delays (work no one waits for runs up
# to 2 s late) 4 ranks of tiny-moe under `optimizer` offload, whole staging, pinned state (its
# copies asynchronous: pageable ones wait for their lane, which hides the race), end in the CPU
# backend's digest; with the step's lane joins dropped (--async-drop-joins, a test hook) they do
# not: the batches on lanes 1..3 fold momentum from state lane 0 has not copied in yet. The
# host-staged all-to-all (--host-staged-exchange, what CUDA ranks sharing a GPU use) ends in the
# same digest too.
source "$(dirname "$0")/lib.sh"
W=4
"$bin" plan --model models/tiny-moe.yaml --topology topologies/cpu-ci.yaml --nodes 1 \
  --gpus-per-node $W --offload optimizer --pinned-state --bf16-momentum --out "$work/opt.json" >/dev/null \
  || bad "plan"
digest() { field "$1" measured.state_digest; }
lazy=(--backend cpu-async --async-seed 5 --async-delay-us 2000000)

m="$(run $W "$work/opt.json" --steps 2)" || bad "cpu: $(cat "$work/err")"
want="$(digest "$m")"
m="$(run $W "$work/opt.json" --steps 2 "${lazy[@]}")" || bad "cpu-async: $(cat "$work/err")"
[ "$(digest "$m")" = "$want" ] && ok || bad "cpu-async, long delays: digest $(digest "$m") != cpu's $want"
# Dropped joins: the step stops on a non-finite update (it folded the poison of fresh memory),
# or, where the late zero-fill of the check sums erased the NaN, ends in another digest.
if m="$(run $W "$work/opt.json" --steps 2 "${lazy[@]}" --async-drop-joins)"; then
  [ "$(digest "$m")" != "$want" ] && ok || bad "dropped joins: the digest did not change"
else
  grep -q "non-finite" "$work/err" && ok || bad "dropped joins: unexpected error $(cat "$work/err")"
fi
m="$(run $W "$work/opt.json" --steps 2 --check-reference $(async 7) --host-staged-exchange)" \
  || bad "host-staged: $(cat "$work/err")"
[ "$(digest "$m")" = "$want" ] && ok || bad "host-staged: digest $(digest "$m") != cpu's $want"
checked "$m" && ok || bad "host-staged: reference error"
[ "$(field "$m" measured.alltoall_bytes_per_rank_max)" = "$(field "$m" predicted.alltoall_bytes_per_rank_max)" ] \
  && ok || bad "host-staged: bytes differ from the plan's"
finish
