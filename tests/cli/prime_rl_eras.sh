#!/usr/bin/env bash
# --prime-rl-version DATE refuses a key outside its era (prime_rl_versions.cc's key eras), as
# prime-rl of that date refuses it (its configs forbid extra keys), and accepts it inside: one
# fixture per era under tests/data/prime-rl/eras.
set -u
source "$(dirname "$0")/lib.sh"
e=tests/data/prime-rl/eras
export HF_HUB_CACHE="$work/hub" HF_HOME="$work/no-home"
mkdir -p "$HF_HUB_CACHE"
accepts() {  # NAME FILE DATE: planned, the plan's fields as the file says
  "$bin" plan --trainer-config "$2" --prime-rl-version "$3" --json >"$work/$1.json" 2>"$work/$1.err" ||
    bad "$1: exit $? $(cat "$work/$1.err")"
}
accepts head-old $e/rl-2026-02-20.toml 2026-02-20
json_check head-old-chunk "$work/head-old.json" 'assert d["workload"]["lm_head_chunk"] == 2048, d["workload"]'
accepts head-new $e/rl-2026-04-01.toml 2026-04-01
json_check head-new-chunk "$work/head-new.json" 'assert d["workload"]["lm_head_chunk"] == 2048, d["workload"]'
accepts full-offload $e/rl-2026-08-20-full-offload.toml 2026-08-20
json_check full-offload-plan "$work/full-offload.json" 'assert d["offload"] == "full", d["offload"]'
accepts sft-new $e/sft-2026-08-18.toml 2026-08-18
json_check sft-new-nodes "$work/sft-new.json" 'assert d["nodes"] == 3, d["nodes"]'

expect head-renamed 2 "$e/rl-2026-02-20.toml:17:1: trainer.model.fused_lm_head_chunk_size: prime-rl of 2026-04-01 has no such key (it forbids extra keys): its era is until 2026-03-09, 93cd1fa37 (#1987); on 2026-04-01 the key is fused_lm_head_token_chunk_size" \
  "$bin" plan --trainer-config $e/rl-2026-02-20.toml --prime-rl-version 2026-04-01
expect offload-before 2 "$e/rl-2026-02-20.toml:18:1: trainer.model.optim_cpu_offload: prime-rl of 2026-01-20 has no such key (it forbids extra keys): its era is from 2026-02-03, e41036a16 (#1694)" \
  "$bin" plan --trainer-config $e/rl-2026-02-20.toml --prime-rl-version 2026-01-20
expect head-before 2 "$e/rl-2026-04-01.toml:16:1: trainer.model.fused_lm_head_token_chunk_size: prime-rl of 2026-02-20 has no such key (it forbids extra keys): its era is from 2026-03-09, 93cd1fa37 (#1987); on 2026-02-20 the key is fused_lm_head_chunk_size" \
  "$bin" plan --trainer-config $e/rl-2026-04-01.toml --prime-rl-version 2026-02-20
EXPECT_MATCH=suffix expect full-offload-before 2 "trainer.model.full_offload: prime-rl of 2026-08-01 has no such key (it forbids extra keys): its era is from 2026-08-15, b8d9553c0 (#3234)" \
  "$bin" plan --trainer-config $e/rl-2026-08-20-full-offload.toml --prime-rl-version 2026-08-01
expect sft-nodes-before 2 "$e/sft-2026-08-18.toml:8:1: deployment.num_train_nodes: prime-rl of 2026-08-01 has no such key (it forbids extra keys): its era is from 2026-08-17, 15d6c8197 (#3256); on 2026-08-01 the key is num_nodes" \
  "$bin" plan --trainer-config $e/sft-2026-08-18.toml --prime-rl-version 2026-08-01
# The SFT rename does not touch RL's [deployment] num_train_gpus.
accepts rl-gpus-old $e/rl-2026-04-01.toml 2026-04-01
# Without the flag nothing is refused: the newest defaults and a note (prime_rl.sh).
"$bin" plan --trainer-config $e/rl-2026-02-20.toml >/dev/null 2>"$work/no-flag.err" && ok ||
  bad "no-flag: $(cat "$work/no-flag.err")"
finish
