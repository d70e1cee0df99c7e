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
expect head-before 2 "$e/rl-2026-04-01.toml:16:1: trainer.model.fused_lm_head_token_chunk_size: prime-rl of 2026-03-01 has no such key (it forbids extra keys): its era is from 2026-03-09, 93cd1fa37 (#1987); on 2026-03-01 the key is fused_lm_head_chunk_size" \
  "$bin" plan --trainer-config $e/rl-2026-04-01.toml --prime-rl-version 2026-03-01
EXPECT_MATCH=suffix expect full-offload-before 2 "trainer.model.full_offload: prime-rl of 2026-08-01 has no such key (it forbids extra keys): its era is from 2026-08-15, b8d9553c0 (#3234)" \
  "$bin" plan --trainer-config $e/rl-2026-08-20-full-offload.toml --prime-rl-version 2026-08-01
expect sft-nodes-before 2 "$e/sft-2026-08-18.toml:8:1: deployment.num_train_nodes: prime-rl of 2026-08-01 has no such key (it forbids extra keys): its era is from 2026-08-17, 15d6c8197 (#3256); on 2026-08-01 the key is num_nodes" \
  "$bin" plan --trainer-config $e/sft-2026-08-18.toml --prime-rl-version 2026-08-01
# The SFT rename does not touch RL's [deployment] num_train_gpus.
accepts rl-gpus-old $e/rl-2026-04-01.toml 2026-04-01
# Without the flag nothing is refused: the newest defaults and a note (prime_rl.sh).
"$bin" plan --trainer-config $e/rl-2026-02-20.toml >/dev/null 2>"$work/no-flag.err" && ok ||
  bad "no-flag: $(cat "$work/no-flag.err")"

# More eras (item 4): tp until 2026-03-26, cp_style from 2026-05-05, group_size from 2026-05-22.
accepts tp-old $e/rl-2026-03-20-tp.toml 2026-03-20
grep -q "trainer.model.tp: tensor parallelism is not modelled: planned as tp 1" "$work/tp-old.err" && ok ||
  bad "tp-old: no tp warning: $(cat "$work/tp-old.err")"
json_check tp-old-group "$work/tp-old.json" 'assert d["gpus_per_node"] == 4, d["gpus_per_node"]'
EXPECT_MATCH=suffix expect tp-after 2 "trainer.model.tp: prime-rl of 2026-04-01 has no such key (it forbids extra keys): its era is until 2026-03-26, effa509cb (#2109)" \
  "$bin" plan --trainer-config $e/rl-2026-03-20-tp.toml --prime-rl-version 2026-04-01
accepts cp-style-new $e/rl-2026-06-01.toml 2026-06-01
json_check cp-style-new-cp "$work/cp-style-new.json" 'assert d["layout"]["cp"] == 2, d["layout"]'
EXPECT_MATCH=suffix expect cp-style-before 2 "trainer.model.cp_style: prime-rl of 2026-05-01 has no such key (it forbids extra keys): its era is from 2026-05-05, 95af0118d (#2418)" \
  "$bin" plan --trainer-config $e/rl-2026-06-01.toml --prime-rl-version 2026-05-01
sed 's/^cp_style = "ring"$//' $e/rl-2026-06-01.toml >"$work/group-only.toml"
EXPECT_MATCH=suffix expect group-before 2 "orchestrator.group_size: prime-rl of 2026-05-10 has no such key (it forbids extra keys): its era is from 2026-05-22, 20f6449e1 (#2599); on 2026-05-10 the key is rollouts_per_example" \
  "$bin" plan --trainer-config "$work/group-only.toml" --prime-rl-version 2026-05-10

# The emit writes the date's key names (prime_rl_key_on, from the same table), and the emitted
# file re-plans with the same version to the same answer.
roundtrip() {  # NAME FILE DATE FLAGS...: plan, emit, re-plan the emitted file
  local name="$1" file="$2" date="$3"; shift 3
  "$bin" plan --trainer-config "$file" --prime-rl-version "$date" "$@" --json >"$work/$name.a.json" 2>/dev/null &&
    "$bin" plan --trainer-config "$file" --prime-rl-version "$date" "$@" --emit prime-rl >"$work/$name.toml" 2>/dev/null &&
    "$bin" plan --trainer-config "$work/$name.toml" --prime-rl-version "$date" --json >"$work/$name.b.json" \
      2>"$work/$name.err" && ok || bad "$name: exit $? $(cat "$work/$name.err")"
  "$py" - "$work/$name.a.json" "$work/$name.b.json" <<'PYEOF' && ok || bad "$name: the re-plan differs"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
for k in ("nodes", "gpus_per_node", "offload", "optimizer", "layout", "workload", "fits"):
    assert a[k] == b[k], (k, a[k], b[k])
PYEOF
}
roundtrip head-2026-03 $e/rl-2026-03-01.toml 2026-03-01 --lm-head-chunk 4096
grep -qx "fused_lm_head_chunk_size = 4096" "$work/head-2026-03.toml" && ! grep -q token_chunk "$work/head-2026-03.toml" &&
  ok || bad "head-2026-03: not the date's name: $(grep fused "$work/head-2026-03.toml")"
json_check head-2026-03-chunk "$work/head-2026-03.b.json" 'assert d["workload"]["lm_head_chunk"] == 4096, d["workload"]'
# The newest schema's name for the same plan without the version.
"$bin" plan --trainer-config $e/rl-2026-03-01.toml --lm-head-chunk 4096 --emit prime-rl 2>/dev/null |
  grep -qx "fused_lm_head_token_chunk_size = 4096" && ok || bad "head-newest: not the newest name"
roundtrip sft-2026-08 $e/sft-2026-08-01.toml 2026-08-01 --gpus-per-node 4
grep -qx "num_gpus = 4" "$work/sft-2026-08.toml" && ! grep -q "^num_train_gpus" "$work/sft-2026-08.toml" &&
  ok || bad "sft-2026-08: not the date's name: $(grep gpus "$work/sft-2026-08.toml")"
json_check sft-2026-08-gpus "$work/sft-2026-08.b.json" 'assert d["gpus_per_node"] == 4, d["gpus_per_node"]'
# The emit check knows the era: prime-rl of 2026-01-20 has no optim_cpu_offload, so a plan of
# optimizer offload is not written (that prime-rl would run it without offload). Two GPUs: on
# one, Qwen3-8B's staged AdamW state and its foreach temporaries do not fit an H200.
"$bin" plan --trainer-config $e/sft-2026-08-01.toml --prime-rl-version 2026-01-20 --offload optimizer \
  --gpus-per-node 2 --emit prime-rl >"$work/emit-before.toml" 2>"$work/emit-before.err"
rc=$?
[ "$rc" = 2 ] && grep -qx -- '--emit: prime-rl of 2026-01-20 has no key optim_cpu_offload (docs/trainer-config.md, "Key eras"), so it would not run this plan'"'"'s offload optimizer; no config written: re-plan with --offload none or a later --prime-rl-version' \
  "$work/emit-before.err" && [ ! -s "$work/emit-before.toml" ] && ok || bad "offload-emit-before: exit $rc $(cat "$work/emit-before.err")"

# --prime-rl-version is a date of the calendar (issue 46 item 19): 2026-02-30 and 0000-01-01
# were taken; on the flag path it is checked too, and a note says it changes no figure there.
for d in 2026-02-30 0000-01-01 2025-13-01 2026-04-31 2025-02-29; do
  expect "version $d" 2 "--prime-rl-version: expected a date YYYY-MM-DD of the calendar, got '$d'" \
    "$bin" plan --model tiny-dense --topology topologies/cpu-ci.yaml --nodes 1 --prime-rl-version $d
done
expect "version on the flag path" 0 "note: --prime-rl-version 2024-02-29: changes no figure without --trainer-config or --runs-on prime-rl (its defaults apply where a trainer config is silent); kept in the plan request" \
  "$bin" plan --model tiny-dense --topology topologies/cpu-ci.yaml --nodes 1 --prime-rl-version 2024-02-29 --json
# The alternatives' keys to change are named as prime-rl of the date names them: SFT
# [deployment] num_nodes before 2026-08-17 (issue 50: today's names were listed for older
# files); and full offload, which that prime-rl cannot run (full_offload from 2026-08-15), is no
# alternative (--runs-on prime-rl's rules; it was offered under a key the date lacks).
"$bin" plan --trainer-config $e/sft-2026-08-01.toml --prime-rl-version 2026-08-01 --json >"$work/alt-era.json" 2>/dev/null
json_check alt-era-names "$work/alt-era.json" 'keys = [k for a in d["trainer_config"]["alternatives"] for k in a["keys_to_change"]]
assert "[deployment] num_nodes = 48" in keys and not any("num_train_nodes" in k for k in keys), keys
assert not any("full_offload" in k for k in keys), keys
assert all(a["offload"] != "full" for a in d["trainer_config"]["alternatives"]), keys'
finish
