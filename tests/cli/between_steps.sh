#!/usr/bin/env bash
# What the trainer runs between two steps (docs/planner.md section 8, "Between steps"):
# prime-rl's RL weight broadcast, listed outside the training step, at the topology's
# weight_broadcast_gbps; nothing for SFT or a LoRA job without an active run; and on prime-rl's
# benchmark matrix, against the time between steps each run's MFU shows
# (scripts/between-steps-from-mfu.py), within 20% on every full RL run of H100 and H200; a
# config's weight broadcast of another type than filesystem is said to be not modelled.
set -u
source "$(dirname "$0")/lib.sh"
flags=(--model qwen3-0.6b --nodes 1 --gpus-per-node 1 --layout fsdp=1 --optimizer adamw
  --seq-len 16384 --tokens-per-step 32768 --ac full --attention fa3 --prime-rl-version 2026-01-15
  --runs-on prime-rl --offload none)
params="$("$bin" inspect --model qwen3-0.6b --json | "$py" -c 'import json,sys; print(json.load(sys.stdin)["params_total"])')"

"$bin" plan "${flags[@]}" --topology topologies/h100-ib.yaml --trainer rl --json >"$work/rl.json" 2>/dev/null
json_check "RL full: every parameter in bf16 over 1.66 GB/s, beside the step" "$work/rl.json" "
t = d['predicted']['breakdown']['between_steps_s']
assert [x['name'] for x in t] == ['weight_broadcast'], t
assert math.isclose(t[0]['s'], 2 * $params / 1.66e9, rel_tol=1e-9), t
assert 'every parameter, bf16' in t[0]['formula'], t
steps = d['predicted']['breakdown']['training_step_s']
assert math.isclose(sum(x['s'] for x in steps), d['predicted']['training_step_s'], rel_tol=1e-9)
assert 'weight_broadcast' not in [x['name'] for x in steps]
assert {'group': 'between', 'key': 'between_steps_s', 'label': \"between training steps (outside the trainer's time/step)\", 'unit': 's'} in d['terms']
"
"$bin" plan "${flags[@]}" --topology topologies/h100-ib.yaml --trainer rl >"$work/rl.txt" 2>/dev/null
grep -q "^  between steps 0.718 s (weight_broadcast), so an iteration of the trainer's loop " "$work/rl.txt" &&
  ok || bad "RL full: no between-steps line: $(grep -i between "$work/rl.txt")"

# A topology of twice the rate halves it; SFT and LoRA without an active run list nothing.
# (A topology's own calibration: key overrides the fitted section.)
sed -E '/^calibration:/a\  weight_broadcast_gbps: 3.32' topologies/h100-ib.yaml >"$work/fast.yaml"
"$bin" plan "${flags[@]}" --topology "$work/fast.yaml" --trainer rl --json >"$work/fast.json" 2>/dev/null
json_check "twice the rate: half the time" "$work/fast.json" "
t = d['predicted']['breakdown']['between_steps_s']
assert math.isclose(t[0]['s'], 2 * $params / 3.32e9, rel_tol=1e-9), t
"
"$bin" plan "${flags[@]}" --topology topologies/h100-ib.yaml --trainer sft --json >"$work/sft.json" 2>/dev/null
json_check "SFT: nothing between steps" "$work/sft.json" "assert d['predicted']['breakdown']['between_steps_s'] == []"
"$bin" plan "${flags[@]}" --topology topologies/h100-ib.yaml --trainer rl --lora-rank 16 \
  --lora-adapters 4 --lora-active-runs 0 --json >"$work/lora.json" 2>/dev/null
json_check "LoRA, no active run: nothing saved" "$work/lora.json" "assert d['predicted']['breakdown']['between_steps_s'] == []"

# A trainer config's weight broadcast, where the trainer reads it: an rl file's
# [trainer.weight_broadcast] over its shared [weight_broadcast], a standalone trainer file's
# [weight_broadcast]. `nccl` is timed as prime-rl's NCCL sender runs it (a gather of each tensor
# over the FSDP group, then rank 0's broadcast of each layer), with a note at its line; another
# type (`nixl`) is said to be not modelled; filesystem, and SFT (no broadcast), say nothing.
wb() {  # FILE: the weight-broadcast warnings and notes, then the between-steps terms, a line each
  "$bin" plan --trainer-config "$1" --json 2>/dev/null |
    "$py" -c 'import json, sys
d = json.load(sys.stdin)
tc = d["trainer_config"]
for w in tc["warnings"] + tc["notes"]:
    if "weight_broadcast" in w: print(w.split(": ", 1)[1])
t = d["predicted"]["breakdown"]["between_steps_s"]
print(" ".join(x["name"] for x in t), "|", " ".join(x["formula"] for x in t))'
}
not_modelled="not modelled: the plan's between-steps time is the filesystem broadcast's (prime-rl's default), not this one's"
timed='"nccl": between steps timed as prime-rl'"'"'s NCCL broadcast (a gather per layer, rank 0'"'"'s broadcast to the inference GPUs)'
rl=tests/data/prime-rl/rl-glm-full.toml
{ cat "$rl"; printf '\n[weight_broadcast]\ntype = "nccl"\n'; } >"$work/wb-shared.toml"
out="$(wb "$work/wb-shared.toml")"
[ "$(head -1 <<<"$out")" = "weight_broadcast.type = $timed" ] &&
  grep -q "^weight_gather weight_broadcast | .*to the inference GPUs across the network" <<<"$out" &&
  ok || bad "rl, shared nccl: $out"
# The shared table, when it names a type, is the trainer's (rl.py's auto_setup_weight_broadcast
# overwrites [trainer.weight_broadcast] with it); without one the trainer's own decides.
{ cat "$work/wb-shared.toml"; printf '[trainer.weight_broadcast]\ntype = "filesystem"\n'; } >"$work/wb-own.toml"
[ "$(wb "$work/wb-own.toml")" = "$(wb "$work/wb-shared.toml")" ] && ok ||
  bad "rl, shared nccl over the trainer's filesystem: $(wb "$work/wb-own.toml")"
{ cat "$rl"; printf '\n[weight_broadcast]\ntype = "filesystem"\n[trainer.weight_broadcast]\ntype = "nccl"\n'; } >"$work/wb-fs.toml"
[ "$(wb "$work/wb-fs.toml")" = "$(wb "$rl")" ] && ok ||
  bad "rl, shared filesystem over the trainer's nccl: $(wb "$work/wb-fs.toml")"
# LoRA with NCCL: prime-rl's rl launcher refuses it; warned, and planned as the filesystem's.
{ cat examples/prime-rl/qwen3-4b-lora-rl.toml; printf '\n[weight_broadcast]\ntype = "nccl"\n'; } >"$work/wb-lora.toml"
out="$(wb "$work/wb-lora.toml")"
[ "$(grep -c '^weight_broadcast.type' <<<"$out")" = 1 ] &&
  grep -q '^weight_broadcast.type = "nccl" with LoRA: prime-rl.s rl launcher refuses it' <<<"$out" &&
  grep -q "^weight_broadcast | prime-rl's filesystem weight broadcast: .*NCCL's broadcast with LoRA is not modelled" <<<"$out" &&
  ok || bad "rl LoRA, nccl: $out"
{ cat "$rl"; printf '\n[trainer.weight_broadcast]\ntype = "nccl"\n'; } >"$work/wb-trainer.toml"
[ "$(wb "$work/wb-trainer.toml" | head -1)" = "trainer.weight_broadcast.type = $timed" ] && ok ||
  bad "rl, the trainer's nccl: $(wb "$work/wb-trainer.toml")"
{ cat tests/data/prime-rl/trainer-fake.toml; printf '\n[weight_broadcast]\ntype = "nccl"\n'; } >"$work/wb-standalone.toml"
grep -q "^weight_gather weight_broadcast | " <<<"$(wb "$work/wb-standalone.toml")" && ok ||
  bad "standalone trainer, nccl: $(wb "$work/wb-standalone.toml")"
{ cat "$rl"; printf '\n[weight_broadcast]\ntype = "nixl"\n'; } >"$work/wb-nixl.toml"
out="$(wb "$work/wb-nixl.toml")"
[ "$(head -1 <<<"$out")" = "weight_broadcast.type = nixl: $not_modelled" ] &&
  grep -q "^weight_broadcast | prime-rl's filesystem weight broadcast" <<<"$out" && ok ||
  bad "rl, nixl: $out"
grep -q "^weight_broadcast | prime-rl's filesystem weight broadcast" <<<"$(wb "$rl")" && ok ||
  bad "rl, no [weight_broadcast]: $(wb "$rl")"
# The rl launcher on one node runs inference beside the trainer: the broadcast stays on NVLink.
{ cat tests/data/prime-rl/rl-gpu-ids.toml; printf '\n[weight_broadcast]\ntype = "nccl"\n'; } >"$work/wb-local.toml"
grep -q "^weight_gather weight_broadcast | .*to the inference GPUs on its node" <<<"$(wb "$work/wb-local.toml")" &&
  ok || bad "rl launcher on one node, nccl: $(wb "$work/wb-local.toml")"
# The NCCL terms, by hand from the plan's own figures: every parameter in bf16 (the GB printed),
# and the text's --explain summary names both terms.
"$bin" plan --trainer-config "$work/wb-shared.toml" --json >"$work/nccl.json" 2>/dev/null
glm_params="$("$bin" inspect --model glm-4.5-air --json | "$py" -c 'import json,sys; print(json.load(sys.stdin)["params_total"])')"
json_check "nccl: every parameter in bf16, gathered on every rank" "$work/nccl.json" "
t = d['predicted']['breakdown']['between_steps_s']
gb = float(t[0]['formula'].split('(')[1].split(' GB')[0])
assert math.isclose(gb, 2 * $glm_params / 1e9, rel_tol=1e-3), (gb, $glm_params)
assert all(x['s'] > 0 for x in t), t
assert d['workload']['weight_broadcast'] == 'nccl' and d['workload']['inference_on_trainer_node'] is False, d['workload']
"
"$bin" plan --trainer-config "$work/wb-shared.toml" 2>/dev/null |
  grep -q "^  between steps [0-9.]* s (weight_gather + weight_broadcast), so an iteration" && ok ||
  bad "nccl: the summary line names both terms"

# The matrix: each run as planned against the time between its steps that its MFU shows.
runs=(tests/data/training-runs/matrix/*.yaml)
args=(); for r in "${runs[@]}"; do args+=(--training-run "$r"); done
"$bin" validate "${args[@]}" --json >"$work/v.json" 2>/dev/null
"$py" scripts/between-steps-from-mfu.py --json >"$work/mfu.json" && ok || bad "between-steps-from-mfu.py failed"
"$py" - "$work/v.json" "$work/mfu.json" <<'PY' && ok || bad "matrix: planned between-steps time against the MFU's"
import json, sys
planned = {r["run"].rsplit("/", 1)[-1]: r["between_steps_s"] for r in json.load(open(sys.argv[1]))["runs"]}
checked = 0
for r in json.load(open(sys.argv[2])):
    if r["gpu"] == "RTX A6000" or r["date"] >= "2026-06":
        continue  # the workstation's loop and June's MFU (docs/validation.md, "Between steps")
    p = planned[r["run_file"]]
    if r["type"] == "rl" and not r["lora_rank"]:
        assert abs(p / r["between_steps_s"] - 1) <= 0.20, (r["run_file"], p, r["between_steps_s"])
        checked += 1
    else:  # LoRA without an active run, SFT: nothing saved, and the MFU shows about nothing
        assert p == 0 and abs(r["between_steps_s"]) < 0.35, (r["run_file"], p, r["between_steps_s"])
assert checked == 10, checked
PY
finish
