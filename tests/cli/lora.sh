#!/usr/bin/env bash
# LoRA (docs/planner.md "LoRA", docs/trainer-config.md): the --lora-* flags, the refusals, the
# plan file's `lora` key through a round trip, and prime-rl's [model.lora] in a trainer config.
set -u
source "$(dirname "$0")/lib.sh"
M=models/qwen3-0.6b.yaml
lora=(--model $M --nodes 1 --optimizer adamw --lora-rank 16)

# Refusals: Muon on the adapters, LoRA's other flags without a rank, a regex target.
expect muon 2 "--optimizer: Muon on LoRA adapters is not planned (prime-rl's LoRA runs train the adapters with AdamW); plan LoRA with --optimizer adamw" \
  "$bin" plan --model $M --nodes 1 --lora-rank 16
expect no-rank 2 "--lora-adapters: needs --lora-rank (LoRA is off without it)" \
  "$bin" plan --model $M --nodes 1 --optimizer adamw --lora-adapters 4
expect zero-rank 2 "--lora-rank: expected a positive integer, got '0'" \
  "$bin" plan --model $M --nodes 1 --optimizer adamw --lora-rank 0
expect slots-offload 2 "--offload: optimizer offload with more than one LoRA adapter slot is refused by prime-rl (optim_cpu_offload with max_concurrent_runs > 1); plan with --offload none or full" \
  "$bin" plan "${lora[@]}" --lora-adapters 2 --offload optimizer
expect regex 2 "--lora-targets: '.*_proj' is a regex pattern; muonplan matches plain module names (q_proj, experts, ...) only" \
  "$bin" plan "${lora[@]}" --lora-targets '.*_proj'

# The flags: the adapters are the plan's tensors (28 layers x 7 targets x A, B; x 4 slots).
expect flags 0 "" "$bin" plan "${lora[@]}" --lora-adapters 4 --lora-alpha 64 --out "$work/lora.json"
json_check flags "$work/lora.json" '
refused = [c for c in d["decision"]["candidates"] if c["offload"] == "optimizer"]
assert refused and all(not c["fits"] and "refused by prime-rl" in c["note"] for c in refused), refused
assert d["lora"] == {"rank": 16, "alpha": 64.0, "target_modules": [], "adapters": 4}, d["lora"]
names = [t["name"] for t in d["tensors"]]
assert len(names) == 28 * 7 * 2 * 4 and "model.layers.0.self_attn.q_proj.lora_A.0" in names, names[:4]
assert sum(math.prod(t["shape"]) for t in d["tensors"]) == 4 * 10092544
assert d["optimizer"] == "adamw"
'
# Round trip: the plan loader (execute --plan) reads the key back; a plan without it reads as
# no LoRA; a bad one is refused at its field before anything runs.
expect round-trip 0 "" "$bin" plan "${lora[@]}" --lora-targets q_proj,v_proj --out "$work/qv.json"
json_check qv "$work/qv.json" '
assert d["lora"]["target_modules"] == ["q_proj", "v_proj"], d["lora"]
assert len(d["tensors"]) == 28 * 2 * 2
'
expect plain 0 "" "$bin" plan --model $M --nodes 1 --out "$work/plain.json"
json_check plain "$work/plain.json" 'assert "lora" not in d'
edit_json "$work/lora.json" "$work/bad.json" 'p["lora"]["adapters"] = 0'
EXPECT_MATCH=suffix expect bad-adapters 2 "$work/bad.json: lora.adapters: expected an integer in [1, 64], got 0" \
  "$bin" execute --plan "$work/bad.json"
edit_json "$work/lora.json" "$work/muon.json" 'p["optimizer"] = "muon"'
EXPECT_MATCH=suffix expect bad-muon 2 "$work/muon.json: optimizer: muon with LoRA: the planner plans LoRA with adamw only" \
  "$bin" execute --plan "$work/muon.json"

# prime-rl: [trainer.model.lora] and [trainer] max_concurrent_runs, as the example has them.
ex=examples/prime-rl/qwen3-4b-lora-rl.toml
expect example 0 "" "$bin" plan --trainer-config $ex --json
cp "$work/out" "$work/ex.json"
json_check example "$work/ex.json" '
assert d["lora"] == {"rank": 16, "alpha": 32.0, "target_modules": [], "adapters": 4}, d["lora"]
assert d["optimizer"] == "adamw" and d["offload"] == "none", (d["optimizer"], d["offload"])
assert d["workload"]["seq_len"] == 16384 and d["workload"]["tokens_per_step"] == 16 * 16384
'
# Muon in the file is refused at the file's optim.type; so is max_concurrent_runs > 1 with
# prime-rl's default optimizer offload.
sed 's/type = "adamw"/type = "muon"/' $ex >"$work/muon.toml"
EXPECT_MATCH=suffix expect file-muon 2 "trainer.optim.type: Muon on LoRA adapters is not planned (prime-rl's LoRA runs train the adapters with AdamW); plan LoRA with --optimizer adamw" \
  "$bin" plan --trainer-config "$work/muon.toml" --json
grep -v optim_cpu_offload $ex >"$work/offload.toml"
EXPECT_MATCH=suffix expect file-offload 2 "trainer.max_concurrent_runs: prime-rl refuses optim_cpu_offload with max_concurrent_runs > 1 (optim_cpu_offload defaults to true on 2026-08-21: write optim_cpu_offload = false)" \
  "$bin" plan --trainer-config "$work/offload.toml" --json
# Before 2026-06-26 optim_cpu_offload defaulted to false (the version table): a 2026-02-26 file
# with max_concurrent_runs > 1 and no optim_cpu_offload ran as written, and is planned without
# offload (issue 50 item 5: prime_rl_lora.cc assumed today's default).
sed 's/^group_size/rollouts_per_example/' "$work/offload.toml" >"$work/offload-feb.toml"
expect file-offload-feb 0 "" "$bin" plan --trainer-config "$work/offload-feb.toml" \
  --prime-rl-version 2026-02-26 --json
json_check file-offload-feb "$work/out" 'assert d["offload"] == "none", d["offload"]'

# Targets that match no module adapt nothing (issue 46 item 12): 0 tensors planned "fits" and
# execute ran it, saving an empty checkpoint. Refused by plan (flag, TOML) and by execute.
nothing="'Q_PROJ' adapts nothing: no linear module of the model has a name component equal to one of them (names match exactly, case included); its modules: qkv_proj, q_proj, k_proj, v_proj, o_proj, gate_up_proj, gate_proj, up_proj, down_proj, lm_head"
expect adapts-nothing 2 "--lora-targets: $nothing" "$bin" plan --model tiny-dense \
  --topology topologies/cpu-ci.yaml --nodes 1 --gpus-per-node 1 --optimizer adamw --lora-rank 4 \
  --lora-targets Q_PROJ --out "$work/nothing.json"
[ ! -e "$work/nothing.json" ] && ok || bad "adapts-nothing wrote a plan"
sed 's/^rank = 16/rank = 16\ntarget_modules = ["Q_PROJ", "fc9"]/' $ex >"$work/targets.toml"
EXPECT_MATCH=suffix expect file-adapts-nothing 2 "trainer.model.lora.target_modules: 'Q_PROJ,fc9' adapts nothing: no linear module of the model has a name component equal to one of them (names match exactly, case included); its modules: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj" \
  "$bin" plan --trainer-config "$work/targets.toml" --json
plan_tiny "$work/q.json" --optimizer adamw --lora-rank 4 --lora-targets q_proj
edit_json "$work/q.json" "$work/empty.json" 'p["tensors"] = []; p["chunks"] = []'
EXPECT_MATCH=suffix expect execute-adapts-nothing 2 "$work/empty.json: tensors: empty: the plan's LoRA adapts nothing (no module matches lora.target_modules); plan it again with targets that match" \
  "$bin" execute --plan "$work/empty.json" --steps 2 --checkpoint "$work/ck"
[ ! -e "$work/ck" ] && ok || bad "execute-adapts-nothing saved a checkpoint"
# A control character in a target passed plan and failed execute's reader (issue 46 item 15).
expect target-control 2 "--lora-targets: must be printable text, got the control character U+0007" \
  "$bin" plan --model tiny-dense --topology topologies/cpu-ci.yaml --nodes 1 --optimizer adamw \
  --lora-rank 4 --lora-targets $'q_proj\x07'

# Adapter slots are bounded (issue 46 item 17): 1000 took 42 s and 2.7 GB, 2^31-1 ran out of
# memory blaming --model. The key that set it is named, at its line; a plan file's too.
slots="at most 64 adapter slots are planned (each is a copy of every adapter tensor: planning time grows with them), got"
expect slots-flag 2 "--lora-adapters: $slots 2147483647" "$bin" plan "${lora[@]}" --offload none \
  --lora-adapters 2147483647
sed 's/^max_concurrent_runs = 4/max_concurrent_runs = 1000/' $ex >"$work/runs.toml"
line="$(grep -n '^max_concurrent_runs' "$work/runs.toml" | cut -d: -f1)"
expect slots-file 2 "$work/runs.toml:$line:23: trainer.max_concurrent_runs: $slots 1000" \
  "$bin" plan --trainer-config "$work/runs.toml" --json
edit_json "$work/q.json" "$work/slots.json" 'p["lora"]["adapters"] = 65'
EXPECT_MATCH=suffix expect plan-file-slots 2 "lora.adapters: expected an integer in [1, 64], got 65" \
  "$bin" execute --plan "$work/slots.json" --steps 1
# The bound itself plans (64 slots of a 4-layer model: about 0.1 s).
plan_tiny "$work/s64.json" --optimizer adamw --lora-rank 4 --lora-adapters 64 2>"$work/err" &&
  json_check slots-64 "$work/s64.json" 'assert d["lora"]["adapters"] == 64 and len(d["tensors"]) % 64 == 0' ||
  bad "64 slots: $(cat "$work/err")"
finish
