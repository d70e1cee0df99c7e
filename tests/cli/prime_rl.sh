#!/usr/bin/env bash
# muonplan plan --trainer-config: prime-rl RL and SFT configs (tests/data/prime-rl, written for
# these tests in prime-rl's schema) read with prime-rl's defaults and older names, model
# resolution through a fake Hugging Face cache, the answer's alternatives, errors, and round
# trips through --emit prime-rl.
set -u
source "$(dirname "$0")/lib.sh"
d=tests/data/prime-rl
export HF_HUB_CACHE="$work/hub" HF_HOME="$work/no-home"  # no real cache: bundled hf_id or fake
mkdir -p "$HF_HUB_CACHE"
plan_json() {  # NAME FILE [flags]: the plan of FILE as JSON in $work/NAME.json
  local name="$1" file="$2"; shift 2
  "$bin" plan --trainer-config "$file" "$@" --json >"$work/$name.json" 2>"$work/$name.err" ||
    bad "$name: exit $? $(cat "$work/$name.err")"
}

# Current RL schema, every TOML form; the file's values, its unknown key a warning.
plan_json glm $d/rl-glm-full.toml
json_check glm-values "$work/glm.json" '
w, t = d["workload"], d["trainer_config"]
assert (d["nodes"], d["gpus_per_node"], d["offload"], d["optimizer"]) == (2, 8, "full", "adamw"), d["nodes"]
assert d["layout"] == {"fsdp": 16, "cp": 2, "ep": 8}, d["layout"]
a = d["optimizer_config"]["adamw"]
assert (a["lr"], a["weight_decay"], a["beta1"], a["beta2"]) == (3e-7, 0.0, 0.9, 0.95), a
assert (w["seq_len"], w["tokens_per_step"], w["micro_batch_seqs"]) == (131072, 2097152, 1), w
assert (w["ac"], w["ac_offload"], w["lm_head_chunk"], w["cp_style"]) == ("full", True, 4096, "ring"), w
assert (t["kind"], t["model_name"], t["model_found_by"]) == ("rl", "zai-org/GLM-4.5-Air", "bundled hf_id"), t
for tab in ["[inference]", "[monitors]", "[ckpt]", "[trainer.scheduler]",
            "[orchestrator.env]", "[orchestrator.sampling]", "[orchestrator.train]"]:
    assert tab in t["ignored_tables"], (tab, t["ignored_tables"])
# [env_vars] is read: its PYTORCH_CUDA_ALLOC_CONF, if any, decides the allocator.
assert "[env_vars]" not in t["ignored_tables"], t["ignored_tables"]
assert t["warnings"] == [
    "tests/data/prime-rl/rl-glm-full.toml:44:1: trainer.model.fancy_new_knob: unknown key in [trainer.model]; not planned"], t["warnings"]
assert [x["objective"] for x in t["alternatives"]] == ["fewest nodes that fit", "fewest GPU-seconds per step", "shortest step"]
for x in t["alternatives"]:
    assert x["fits"] and x["nodes"] <= t["max_nodes"], x
    for k in x["keys_to_change"]:
        assert k.startswith("[deployment] ") or k.startswith("[trainer.model] "), k
'
grep -qx "warning: $d/rl-glm-full.toml:44:1: trainer.model.fancy_new_knob: unknown key in \[trainer.model\]; not planned" \
  "$work/glm.err" && ok || bad "glm: the warning is not on stderr: $(cat "$work/glm.err")"
"$bin" plan --trainer-config $d/rl-glm-full.toml --explain 2>/dev/null >"$work/glm.txt"
grep -q "^tables ignored (they do not change the plan):.* \[inference\]" "$work/glm.txt" && ok ||
  bad "--explain does not list the ignored tables"
grep -q "^  as written: 2 node(s) x 8 GPUs, fsdp=16,cp=2,ep=8, offload full" "$work/glm.txt" && ok ||
  bad "the config as written is not printed first: $(grep -m3 'as written' "$work/glm.txt")"

# The shipped examples plan without a warning, and the main job's fits as written.
for f in examples/prime-rl/*.toml; do
  expect "example $f" 0 "" "$bin" plan --trainer-config "$f" --json
done
"$bin" plan --trainer-config examples/prime-rl/glm-4.5-air-rl-131k.toml --json >"$work/main.json" 2>&1
json_check main-job "$work/main.json" '
t = d["trainer_config"]
assert t["as_written"]["fits"] and t["as_written"]["nodes"] == 2 and d["offload"] == "full", t["as_written"]
assert d["workload"]["seq_len"] == 131072 and len(t["alternatives"]) == 3
'

# Defaults: adamw, optimizer offload, AC + offload, 8192-token head, ep auto, 128 rows of 2048.
plan_json defaults $d/rl-defaults.toml
json_check defaults "$work/defaults.json" '
w, o = d["workload"], d["optimizer_config"]["adamw"]
assert (d["nodes"], d["offload"], d["optimizer"]) == (1, "optimizer", "adamw")
assert d["optimizer_config"]["optimizer_offload_pinned"] is True  # prime-rl pins the state
assert d["layout"] == {"fsdp": 8, "cp": 1, "ep": 8}, d["layout"]
assert (o["lr"], o["weight_decay"], o["beta1"], o["beta2"]) == (1e-6, 0.01, 0.9, 0.999), o
assert (w["seq_len"], w["tokens_per_step"], w["ac"], w["ac_offload"], w["lm_head_chunk"], w["cp_style"]) == \
    (2048, 128 * 2048, "full", True, 8192, "ring"), w
n = " ".join(d["trainer_config"]["notes"])
assert "an upper bound" in n and "token_batch_size" in n, n
'
# Older names: fused_lm_head_chunk_size "auto", rollouts_per_example; single node; rows rounded.
plan_json old $d/rl-old.toml
json_check old "$work/old.json" '
w, o = d["workload"], d["optimizer_config"]
assert (d["nodes"], d["gpus_per_node"], d["offload"], d["optimizer"]) == (1, 6, "none", "muon")
assert d["layout"] == {"fsdp": 6, "cp": 1, "ep": 2}, d["layout"]
assert (o["lr"], o["momentum"], o["weight_decay"]) == (0.02, 0.9, 0.1), o
assert (w["lm_head_chunk"], w["tokens_per_step"]) == (8192, 66 * 8192), w  # 64 rows -> 66 for 6 workers
'
# "None" switches sections off; sign_sgd full offload; nodes_per_fsdp_group.
plan_json none $d/rl-none.toml
json_check none "$work/none.json" '
w = d["workload"]
assert (d["offload"], d["optimizer"], d["layout"]["ep"]) == ("full", "signsgd", 1)
assert (w["ac"], w["ac_offload"], w["lm_head_chunk"], w["cp_style"]) == ("none", False, 0, "ulysses"), w
'
# SFT, current and older schemas.
plan_json sft $d/sft.toml
json_check sft "$work/sft.json" '
w = d["workload"]
assert (d["nodes"], d["offload"], d["optimizer"], d["trainer_config"]["kind"]) == (2, "none", "muon", "sft")
assert d["layout"] == {"fsdp": 16, "cp": 2, "ep": 1}, d["layout"]
assert (w["seq_len"], w["tokens_per_step"], w["micro_batch_seqs"], w["lm_head_chunk"]) == (16384, 64 * 16384, 1, 0), w
'
plan_json sft-top $d/sft-old-top.toml
json_check sft-old-top "$work/sft-top.json" '
assert (d["nodes"], d["gpus_per_node"], d["offload"]) == (2, 4, "optimizer")
assert (d["workload"]["tokens_per_step"], d["workload"]["micro_batch_seqs"]) == (32 * 4096, 2)
'
plan_json sft-dep $d/sft-old-deployment.toml
json_check sft-old-deployment "$work/sft-dep.json" 'assert (d["nodes"], d["gpus_per_node"]) == (3, 8)'

# A later schema's AC mode is planned as full, with a warning at the key; selective is planned
# (tests/cli/prime_rl_selective_ac.sh), without the AC offload prime-rl's default turns on.
printf '[model]\nname = "Qwen/Qwen3-8B"\n[data]\nbatch_size = 8\n[model.ac]\nmode = "full_moe"\n' >"$work/moe.toml"
expect ac-later-mode 0 "warning: $work/moe.toml:6:8: model.ac.mode: full_moe AC is planned as full AC, \
which saves fewer activations: a lower bound" "$bin" plan --trainer-config "$work/moe.toml" --json
printf '[model]\nname = "Qwen/Qwen3-8B"\n[data]\nbatch_size = 8\n[model.ac]\nmode = "selective"\n' >"$work/sel.toml"
expect ac-selective 0 "warning: $work/sel.toml:6:8: model.ac.mode: ac_offloading with selective AC or \
freq > 1 is planned without the offload (what prime-rl offloads there is not modelled): GPU memory an \
upper bound" "$bin" plan --trainer-config "$work/sel.toml" --json

# Later schemas' weight_decay = "auto": 0.01 for SFT, 0.0 for RL.
plan_json sft-auto $d/sft-auto-wd.toml
json_check wd-auto-sft "$work/sft-auto.json" 'assert d["optimizer_config"]["adamw"]["weight_decay"] == 0.01'
sed 's/^group_size = 16/group_size = 16\n[trainer.optim]\nweight_decay = "auto"/' $d/rl-defaults.toml >"$work/rl-auto.toml"
plan_json rl-auto "$work/rl-auto.toml"
json_check wd-auto-rl "$work/rl-auto.json" 'assert d["optimizer_config"]["adamw"]["weight_decay"] == 0.0'

# Flags override the file and say so.
expect override 0 "note: --nodes 2 overrides $d/rl-defaults.toml:8 (deployment.num_train_nodes = 1)" \
  "$bin" plan --trainer-config $d/rl-defaults.toml --nodes 2 --json

printf '[model]\nname = "Qwen/Qwen3-8B"\noffload = "none"\n\n[workload]\nseq_len = 4096\n' >"$work/old-emit.toml"
# A file of the old --emit toml: its tables are named, its keys unknown; nothing of it is read.
expect old-emit 0 "warning: $work/old-emit.toml:5:2: workload: an older muonplan --emit toml table, \
not read; write the file again with --emit prime-rl
warning: $work/old-emit.toml:3:1: model.offload: unknown key in [model]; not planned" \
  "$bin" plan --trainer-config "$work/old-emit.toml" --json
expect bad-flag 2 "--nodes: expected a positive integer or auto, got 'abc'" \
  "$bin" plan --trainer-config $d/rl-defaults.toml --nodes abc
# More nodes than rows: whole rows again for the world the flag names (2M tokens on 12 workers).
"$bin" plan --trainer-config $d/rl-glm-full.toml --nodes 3 --json >"$work/n3.json" 2>"$work/n3.err"
grep -qx "note: 2097152 tokens planned as 3145728: whole rows of 131072 for the 12 workers of --nodes 3" \
  "$work/n3.err" && json_check rows-for-nodes "$work/n3.json" 'assert d["workload"]["tokens_per_step"] == 3145728' ||
  bad "rows-for-nodes: $(cat "$work/n3.err")"

# Model resolution: a fake hub cache (refs/main, and a repo without it), HF_HOME, short names.
snap="$HF_HUB_CACHE/models--fake-org--Tiny/snapshots"
mkdir -p "$snap/abc123" "$snap/old999" "$HF_HUB_CACHE/models--fake-org--Tiny/refs"
cp tests/data/hf/qwen3-0.6b.json "$snap/abc123/config.json"
cp tests/data/hf/qwen3-8b.json "$snap/old999/config.json"
echo abc123 >"$HF_HUB_CACHE/models--fake-org--Tiny/refs/main"
mkdir -p "$HF_HUB_CACHE/models--fake-org--NoRef/snapshots/zzz"
cp tests/data/hf/qwen3-8b.json "$HF_HUB_CACHE/models--fake-org--NoRef/snapshots/zzz/config.json"
"$bin" inspect --model fake-org/Tiny --json >"$work/tiny.json" && json_check hf-cache-refs-main "$work/tiny.json" \
  'assert d["params_total"] < 1e9, d["params_total"]' || bad "inspect fake-org/Tiny"
"$bin" inspect --model fake-org/NoRef --json >"$work/noref.json" && json_check hf-cache-no-ref "$work/noref.json" \
  'assert d["params_total"] > 7e9, d["params_total"]' || bad "inspect fake-org/NoRef"
mkdir -p "$work/home/hub" && cp -r "$HF_HUB_CACHE/models--fake-org--Tiny" "$work/home/hub/"
HF_HUB_CACHE= HF_HOME="$work/home" "$bin" inspect --model fake-org/Tiny >/dev/null && ok || bad "HF_HOME/hub"
mkdir -p "$work/local" && cp tests/data/hf/qwen3-8b.json "$work/local/config.json"
"$bin" inspect --model "$work/local" >/dev/null && ok || bad "a directory holding config.json"
for m in glm-4.5-air zai-org/GLM-4.5-Air; do
  "$bin" inspect --model "$m" | grep -q "^model glm-4.5-air" && ok || bad "--model $m"
done
"$bin" inspect --list | grep -qx "glm-4.5-air  *zai-org/GLM-4.5-Air" && ok || bad "inspect --list"
printf '[model]\nname = "nobody/Nothing"\n\n[data]\nbatch_size = 8\n' >"$work/nomodel.toml"
expect model-missing 2 "$work/nomodel.toml:2:8: model.name: 'nobody/Nothing' not found; looked in: \
nobody/Nothing (no such file or directory); $HF_HUB_CACHE/models--nobody--Nothing (Hugging Face cache); \
the bundled specs' names and hf_id (muonplan inspect --list) (nothing is downloaded); --model PATH \
(a spec, config.json or a bundled name) overrides the file's name" \
  "$bin" plan --trainer-config "$work/nomodel.toml"
expect no-model 2 "--model: is required (a path, a bundled name, an HF id), or --trainer-config naming [model] name" \
  "$bin" plan

# Issue 35, item 1: an SFT file with [inference] (online evals) is SFT: its [data] and [optim].
plan_json sft-inf $d/sft-inference.toml
json_check sft-with-inference "$work/sft-inf.json" '
w, t = d["workload"], d["trainer_config"]
assert t["kind"] == "sft", t["kind"]
assert (d["nodes"], d["gpus_per_node"]) == (1, 4), (d["nodes"], d["gpus_per_node"])
assert (w["seq_len"], w["tokens_per_step"], w["lm_head_chunk"]) == (8192, 32 * 8192, 0), w
assert d["optimizer_config"]["adamw"]["lr"] == 2e-5, d["optimizer_config"]["adamw"]
assert "[inference]" in t["ignored_tables"] and "[eval]" in t["ignored_tables"], t["ignored_tables"]
'
# Item 2: rows are packed to the orchestrator's seq_len, not the trainer's upper bound.
plan_json orch-seq $d/rl-orch-seq.toml
json_check rows-of-orchestrator "$work/orch-seq.json" '
w, t = d["workload"], d["trainer_config"]
assert (w["seq_len"], w["tokens_per_step"]) == (8192, 64 * 8192), w
assert any("16384 is only its upper bound" in n for n in t["notes"]), t["notes"]
'
# Item 3: a standalone trainer file (`trainer @ FILE`): [data.fake] rows of [model] seq_len,
# the world from the flags (torchrun's), no unknown-key warning for [data.fake]. Without them
# one process on one GPU, as `uv run trainer @ FILE` runs it, said in a note (issue 50 item 5:
# 8 GPUs were assumed).
"$bin" plan --trainer-config $d/trainer-fake.toml --json >"$work/trainer.json" 2>"$work/trainer.err" ||
  bad "trainer file: $(cat "$work/trainer.err")"
[ -s "$work/trainer.err" ] && bad "trainer file warns: $(cat "$work/trainer.err")" || ok
json_check trainer-file "$work/trainer.json" '
w, t = d["workload"], d["trainer_config"]
assert t["kind"] == "trainer", t["kind"]
assert (d["nodes"], d["gpus_per_node"], d["world_size"]) == (1, 1, 1), (d["nodes"], d["gpus_per_node"])
assert (w["seq_len"], w["tokens_per_step"], w["lm_head_chunk"]) == (4096, 16 * 4096, 8192), w
assert d["optimizer_config"]["adamw"]["lr"] == 3e-6
assert any("planned as one process on one GPU (uv run trainer @ FILE) unless --gpus-per-node G" in n
           for n in t["notes"]), t["notes"]
assert "[loss]" in t["ignored_tables"], t["ignored_tables"]
for x in t["alternatives"]:
    for k in x["keys_to_change"]:
        assert not k.startswith("[deployment]"), k
'
plan_json trainer-2n $d/trainer-fake.toml --nodes 2 --gpus-per-node 4
json_check trainer-world-from-flags "$work/trainer-2n.json" 'assert (d["world_size"], d["gpus_per_node"]) == (8, 4)'
# Item 5: the rl_slurm era's top-level num_train_nodes / gpus_per_node; the local launcher's
# trainer_gpu_ids.
plan_json slurm $d/rl-slurm-era.toml
json_check rl-slurm-world "$work/slurm.json" '
t = d["trainer_config"]
assert (d["nodes"], d["gpus_per_node"], d["layout"]["ep"]) == (2, 8, 8), (d["nodes"], d["layout"])
assert d["workload"]["tokens_per_step"] == 64 * 4096, d["workload"]
assert not any("single node" in n for n in t["notes"]), t["notes"]
assert any("is a key of an older prime-rl: planned with the defaults of 2026-08-21" in n and
           "optim_cpu_offload off" in n for n in t["notes"]), t["notes"]
'
plan_json slurm-table $d/rl-slurm-table.toml
json_check slurm-table-world "$work/slurm-table.json" 'assert (d["nodes"], d["gpus_per_node"]) == (3, 8), (d["nodes"], d["gpus_per_node"])'
plan_json gpu-ids $d/rl-gpu-ids.toml
json_check trainer-gpu-ids "$work/gpu-ids.json" '
assert (d["nodes"], d["gpus_per_node"]) == (1, 3), (d["nodes"], d["gpus_per_node"])
assert d["workload"]["tokens_per_step"] == 48 * 2048, d["workload"]
'
# Item 10: a one-node file with GPUs to spare tries more GPUs in that node first.
# (GLM-4.5-Air does not fit one GPU even under full offload, 212 GB of bf16 weights: fewest
# nodes would be many nodes x 1 GPU. Qwen3-30B-A3B, used before, fits one GPU under full offload
# since the allocator reserve is simulated.)
printf '[model]\nname = "zai-org/GLM-4.5-Air"\n[deployment]\nnum_train_gpus = 1\nnum_infer_gpus = 2\n[trainer.model]\noptim_cpu_offload = false\n[orchestrator]\ntoken_batch_size = 65536\n' >"$work/one-gpu.toml"
plan_json one-gpu "$work/one-gpu.toml"
json_check one-node-more-gpus "$work/one-gpu.json" '
t = d["trainer_config"]
assert not t["as_written"]["fits"], t["as_written"]
best = t["alternatives"][0]
assert best["nodes"] == 1 and best["gpus_per_node"] in range(2, 7), best
assert "[deployment] num_train_gpus = %d" % best["gpus_per_node"] in best["keys_to_change"], best
'
# An rl_slurm file changes its own top-level world key, not a [deployment] it does not have.
json_check slurm-world-key "$work/slurm.json" '
keys = [k for a in d["trainer_config"]["alternatives"] for k in a["keys_to_change"]]
assert not any(k.startswith("[deployment]") for k in keys), keys
assert "(top level) num_train_nodes = 1" in keys, keys
'
# Item 4: keys that move memory or time and are not modelled warn, naming the figure; the
# dtypes are planned (prime_rl_dtypes.sh), so no word about them.
printf '[model]\nname = "Qwen/Qwen3-8B"\noptimization_dtype = "bfloat16"\nreduce_dtype = "bfloat16"\nquantization = { type = "fp8" }\nmoe_use_grouped_mm = false\n[data]\nbatch_size = 8\n' >"$work/dtype.toml"
"$bin" plan --trainer-config "$work/dtype.toml" --json >/dev/null 2>"$work/dtype.err"
for k in "model.quantization: fp8 weights and GEMMs are not modelled: planned in bf16, so GPU peak (weights, activations) and step time are those of bf16" \
  "model.moe_use_grouped_mm: false (a loop over experts) is not modelled: step time is planned for grouped GEMMs, a lower bound"; do
  grep -qx "warning: $work/dtype.toml:[0-9]*:[0-9]*: $k" "$work/dtype.err" && ok || bad "no warning '$k': $(cat "$work/dtype.err")"
done
grep -q "optimization_dtype\|reduce_dtype" "$work/dtype.err" && bad "a dtype warned: $(cat "$work/dtype.err")" || ok
printf '[model]\nname = "Qwen/Qwen3-8B"\nfp8 = true\n[data]\nbatch_size = 8\n' >"$work/fp8.toml"
"$bin" plan --trainer-config "$work/fp8.toml" --json >/dev/null 2>"$work/fp8.err"
grep -q "^warning: $work/fp8.toml:3:7: model.fp8: fp8 GEMMs are not modelled: planned in bf16, so step time is that of bf16" "$work/fp8.err" &&
  ok || bad "no fp8 warning: $(cat "$work/fp8.err")"
# Item 6: --prime-rl-version: the defaults of that date (before 2026-06-26: no optimizer
# offload, ep 1, no AC, fused head disabled); a bad date exits 2.
plan_json v-old $d/rl-defaults.toml --prime-rl-version 2026-06-01
json_check version-defaults "$work/v-old.json" '
w = d["workload"]
assert (d["offload"], d["layout"]["ep"], w["ac"], w["ac_offload"], w["lm_head_chunk"]) == ("none", 1, "none", False, 0), (d["offload"], d["layout"], w)
assert any("--prime-rl-version 2026-06-01" in n for n in d["trainer_config"]["notes"])
'
plan_json v-mid $d/rl-defaults.toml --prime-rl-version 2026-07-01
json_check version-head-1024 "$work/v-mid.json" 'assert (d["offload"], d["workload"]["lm_head_chunk"]) == ("optimizer", 1024)'
expect bad-version 2 "--prime-rl-version: expected a date YYYY-MM-DD of the calendar, got 'main'" \
  "$bin" plan --trainer-config $d/rl-defaults.toml --prime-rl-version main

# Errors: one line at the file's line and column, exit 2.
err() {  # NAME LINE TEXT: the config TEXT fails with LINE
  printf '%b' "$3" >"$work/$1.toml"
  expect "$1" 2 "$work/$1.toml:$2" "$bin" plan --trainer-config "$work/$1.toml"
}
rl='[model]\nname = "Qwen/Qwen3-30B-A3B"\n[deployment]\ntype = "multi_node"\nnum_train_nodes = 1\n'
err ep-cp "8:6: trainer.model.ep: ep % cp != 0 (ep 2, cp 4)" "$rl[trainer.model]\ncp = 4\nep = 2\n"
err seq-cp "1:11: seq_len: 1001 does not divide by cp = 2" "seq_len = 1001\n$rl[trainer.model]\ncp = 2\n"
err two-offloads "7:16: trainer.model.full_offload: at most one of optim_cpu_offload, full_offload, \
fsdp_cpu_offload (optim_cpu_offload defaults to true on 2026-08-21: write optim_cpu_offload = false)" \
  "$rl[trainer.model]\nfull_offload = true\n"
err muon-full "7:16: trainer.model.full_offload: prime-rl takes full_offload only with adamw and sign_sgd" \
  "$rl[trainer.model]\nfull_offload = true\noptim_cpu_offload = false\n[trainer.optim]\ntype = \"muon\"\n"
err muon-fsdp "7:20: trainer.model.fsdp_cpu_offload: prime-rl rejects fsdp_cpu_offload with muon" \
  "$rl[trainer.model]\nfsdp_cpu_offload = true\noptim_cpu_offload = false\n[trainer.optim]\ntype = \"muon\"\n"
err both-batches "7:20: orchestrator.token_batch_size: give batch_size or token_batch_size, not both" \
  "$rl[orchestrator]\ntoken_batch_size = 4096\nbatch_size = 4\n"
err group "7:14: orchestrator.batch_size: not a multiple of group_size = 16" \
  "$rl[orchestrator]\nbatch_size = 20\ngroup_size = 16\n"
err orch-seq "8:11: orchestrator.seq_len: exceeds the trainer's seq_len 2048" \
  "seq_len = 2048\n$rl[orchestrator]\nseq_len = 4096\n"
err type "7:6: trainer.model.cp: expected an integer, got \"two\"" "$rl[trainer.model]\ncp = \"two\"\n"
err sgd "7:8: trainer.optim.type: muonplan plans muon, adamw and sign_sgd, not sgd" "$rl[trainer.optim]\ntype = \"sgd\"\n"
err old-and-new "7:28: trainer.model.fused_lm_head_chunk_size: older name of fused_lm_head_token_chunk_size; give one of them" \
  "$rl[trainer.model]\nfused_lm_head_chunk_size = 8\nfused_lm_head_token_chunk_size = 8\n"
err sft-micro "7:20: data.micro_batch_size: context parallelism needs micro_batch_size = 1" \
  '[model]\nname = "Qwen/Qwen3-8B"\ncp = 2\n[deployment]\nnum_train_gpus = 4\n[data]\nmicro_batch_size = 2\n'
# Item 7: keys of another optimizer type, and Muon keys prime-rl lacks, are refused.
err nesterov-muon "8:12: trainer.optim.nesterov: not a key of type = \"muon\" (only sgd); prime-rl forbids extra keys" \
  "$rl[trainer.optim]\ntype = \"muon\"\nnesterov = true\n"
err betas-sign "8:10: trainer.optim.betas1: not a key of type = \"sign_sgd\" (only adamw, muon); prime-rl forbids extra keys" \
  "$rl[trainer.optim]\ntype = \"sign_sgd\"\nbetas1 = 0.9\n"
err bf16-momentum "8:17: trainer.optim.bf16_momentum: prime-rl main has no such key and forbids extra keys; \
it needs a MuonConfig field passed on to dion's Muon (bf16_momentum); until prime-rl adds it, write \
\`# muonplan: bf16_momentum = ...\`" "$rl[trainer.optim]\ntype = \"muon\"\nbf16_momentum = true\n"
# Item 8: SFT with cp: seq_len % (2 x cp) == 0, as prime-rl's SFT trainer checks; data.subsets.
err sft-cp2 "7:11: data.seq_len: 1026 does not divide by 2 x cp = 4 (prime-rl's SFT trainer checks it)" \
  '[model]\nname = "Qwen/Qwen3-8B"\ncp = 2\n[deployment]\nnum_train_gpus = 4\n[data]\nseq_len = 1026\nbatch_size = 8\n'
printf '[model]\nname = "Qwen/Qwen3-8B"\n[data]\nbatch_size = 8\nsubsets = ["a", "b"]\n' >"$work/subsets.toml"
expect data-subsets 0 "" "$bin" plan --trainer-config "$work/subsets.toml" --json
err syntax "2:6: toml: Error while parsing value: could not determine value type" \
  '[trainer.model]\ncp = = 2\n'

# Planning tables of another kind were passed over and planned as prime-rl's defaults (issue
# 46 item 14): refused with the key and the kind expected.
err model-string '1:9: model: expected a table ([model]), got "Qwen/Qwen3-8B"' \
  'model = "Qwen/Qwen3-8B"\nseq_len = 4096\n[deployment]\ntype = "multi_node"\nnum_train_nodes = 1\n'
err deployment-array '4:1: deployment: expected a table ([deployment]), got an array of tables ([[deployment]])' \
  'seq_len = 4096\n[model]\nname = "Qwen/Qwen3-8B"\n[[deployment]]\ntype = "multi_node"\nnum_train_nodes = 4\n'
err deployment-int '2:14: deployment: expected a table ([deployment]), got 1' \
  'seq_len = 4096\ndeployment = 1\n[model]\nname = "Qwen/Qwen3-8B"\n'
err orchestrator-bool '2:16: orchestrator: expected a table ([orchestrator]), got true' \
  'seq_len = 4096\norchestrator = true\n[model]\nname = "Qwen/Qwen3-8B"\n'
err trainer-model-string '5:9: trainer.model: expected a table ([trainer.model]), got "x"' \
  'seq_len = 4096\n[model]\nname = "Qwen/Qwen3-8B"\n[trainer]\nmodel = "x"\n'
err sft-optim-string '1:9: optim: expected a table ([optim]), got "adamw"' \
  'optim = "adamw"\n[model]\nname = "Qwen/Qwen3-8B"\n[data]\nbatch_size = 8\n'

# --lr and --weight-decay over a trainer config move the optimizer the config runs (issue 46
# item 11): an AdamW file reads optim.lr as the AdamW lr (adamw.lr, what its step uses), Muon's
# AdamW group takes optim.weight_decay too; --adamw-lr keeps its meaning. Each with a note.
sed 's/^type = "muon"/type = "adamw"/' examples/prime-rl/qwen3-8b-sft.toml >"$work/adamw.toml"
"$bin" plan --trainer-config "$work/adamw.toml" --lr 3e-4 --weight-decay 0.02 --json \
  >"$work/lr.json" 2>"$work/lr.err" || bad "adamw --lr: $(cat "$work/lr.err")"
json_check adamw-lr "$work/lr.json" '
a = d["optimizer_config"]["adamw"]
assert d["optimizer"] == "adamw" and (a["lr"], a["weight_decay"]) == (3e-4, 0.02), a'
grep -qxF "note: --lr 3e-4 overrides $work/adamw.toml:20 (optim.lr = 0.01), which the file's optimizer reads as --adamw-lr" "$work/lr.err" &&
  grep -qxF "note: --weight-decay 0.02 overrides $work/adamw.toml:21 (optim.weight_decay = 0.01), which the file's optimizer reads as --adamw-weight-decay" "$work/lr.err" &&
  ok || bad "adamw --lr notes: $(cat "$work/lr.err")"
"$bin" plan --trainer-config "$work/adamw.toml" --lr 3e-4 --adamw-lr 5e-5 --json >"$work/alr.json" 2>/dev/null
json_check adamw-lr-kept "$work/alr.json" 'assert d["optimizer_config"]["adamw"]["lr"] == 5e-5, d["optimizer_config"]'
"$bin" plan --trainer-config examples/prime-rl/qwen3-8b-sft.toml --weight-decay 0.02 --json >"$work/mwd.json" 2>/dev/null
json_check muon-adamw-decay "$work/mwd.json" '
c = d["optimizer_config"]
assert d["optimizer"] == "muon" and c["weight_decay"] == 0.02 and c["adamw"]["weight_decay"] == 0.02, c'
finish
