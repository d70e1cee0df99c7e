#!/usr/bin/env bash
# Hostile values inside well-formed inputs (docs/reliability.md): every case below was accepted,
# silently replaced, or failed with exit 1 or a traceback. Each must now exit 2 with exactly one
# line naming the flag or the file (and key), and what `plan` writes `execute` must run.
#   hyperparameters and limits:  plan refuses what execute would refuse, with the same message
#   Newton-Schulz schedules:     at most 64 steps, from a flag or in a plan
#   plan files:                  unknown keys, duplicate keys, shapes past 10^8
#   checkpoints at resume:       another model, bf16 as fp32, torn, flipped, missing, a file
#                                elsewhere, another checksum: exit 2, not 1
#   execute flags:               --steps, --comm-timeout, --inject-nonfinite
#   YAML and metrics:            duplicate keys, non-UTF-8 names, absurd metrics numbers
set -u
source "$(dirname "$0")/lib.sh"
M=models/qwen3-8b.yaml
T="--topology topologies/cpu-ci.yaml"
py=/usr/bin/python3

# --- Item 6: hyperparameters and limits the planner took and the executor refused -----------
expect "lr inf" 2 "--lr: must be a finite number > 0, got inf" "$bin" plan --model $M --lr inf
expect "weight-decay nan" 2 "--weight-decay: must be a finite number >= 0, got nan" \
  "$bin" plan --model $M --weight-decay nan
expect "momentum 2" 2 "--momentum: must be in (0, 1), got 2" "$bin" plan --model $M --momentum 2
expect "ns-schedule ''" 2 "--ns-schedule: expected 1 to 64 (a, b, c) steps, got 0" \
  "$bin" plan --model $M --ns-schedule ''
for v in 0 -3 nan; do
  expect "update-rms $v" 2 "--update-rms: must be a finite number > 0, got $v" \
    "$bin" plan --model $M --update-rms "$v"
done
for v in 0 -4; do
  expect "gpus-per-node $v" 2 "--gpus-per-node: expected a positive integer, got '$v'" \
    "$bin" plan --model $M --gpus-per-node "$v"
done
expect "max-nodes 0" 2 "--max-nodes: expected a positive integer, got '0'" \
  "$bin" plan --model $M --max-nodes 0
expect "gpu-memory-gib nan" 2 "--gpu-memory-gib: must be a finite number > 0, got nan" \
  "$bin" plan --model $M --gpu-memory-gib nan
expect "host-ram-gib 0" 2 "--host-ram-gib: must be a finite number > 0, got 0" \
  "$bin" plan --model $M --host-ram-gib 0
expect "adamw-betas 0.9,1" 2 "--adamw-betas: must be in [0, 1), got 1" \
  "$bin" plan --model $M --adamw-betas 0.9,1
expect "adamw-lr -1" 2 "--adamw-lr: must be a finite number > 0, got -1" \
  "$bin" plan --model $M --adamw-lr -1
expect "report update-rms 0" 2 "--update-rms: must be a finite number > 0, got 0" \
  "$bin" report --model $M --nodes 1 --update-rms 0 --out "$work/r"
# What plan writes, execute runs: explicit values at the edges of their ranges.
"$bin" plan --model models/tiny-dense.yaml $T --nodes 1 --gpus-per-node 1 --offload none \
  --momentum 0.5 --update-rms 0.18 --adamw-betas 0,0.999 --weight-decay 0 \
  --out "$work/p.json" >/dev/null 2>"$work/err" || bad "plan for execute: $(cat "$work/err")"
if timeout 60 "$bin" execute --plan "$work/p.json" --steps 2 >/dev/null 2>"$work/err"; then ok
else bad "execute of a plan with edge values: $(cat "$work/err")"; fi

# --- Item 7: Newton-Schulz schedules of at most 64 steps ----------------------------------
s64="$("$py" -c "print(';'.join(['3.4445,-4.775,2.0315'] * 64))")"
s65="$s64;3.4445,-4.775,2.0315"
expect "ns-schedule 65 steps" 2 "--ns-schedule: expected 1 to 64 (a, b, c) steps, got 65" \
  "$bin" plan --model $M --ns-schedule "$s65"
if "$bin" plan --model $M --ns-schedule "$s64" >/dev/null 2>&1; then ok; else bad "64 steps refused"; fi

# edit_plan OUT PYTHON: p.json edited by a Python statement on `p` (the plan as a dict).
edit_plan() { edit_json "$work/p.json" "$1" "$2"; }
edit_plan "$work/ns65.json" 'p["optimizer_config"]["newton_schulz_coefficients"] *= 13'
expect "plan with 65 NS rows" 2 "muonplan: rank 0: $work/ns65.json: optimizer_config.newton_schulz_coefficients: expected 1 to 64 (a, b, c) steps, got 65" \
  "$bin" execute --plan "$work/ns65.json"

# --- Plans: shapes, unknown keys, duplicate keys -------------------------------------------
edit_plan "$work/big.json" 'p["tensors"][0]["shape"] = [1000, 10**9]'
expect "plan shape [1000, 10^9]" 2 "muonplan: rank 0: $work/big.json: tensors[0].shape[1]: expected an integer in [1, 100000000], got 1000000000" \
  "$bin" execute --plan "$work/big.json"
edit_plan "$work/unknown.json" 'p["optimizer_config"]["momentun"] = 0.5'
expect "plan unknown key" 2 "muonplan: rank 0: $work/unknown.json: optimizer_config.momentun: unknown key (muonplan plan does not write it)" \
  "$bin" execute --plan "$work/unknown.json"
edit_plan "$work/unknown2.json" 'p["chunks"][0]["ownrs"] = [0]'
expect "plan unknown chunk key" 2 "muonplan: rank 0: $work/unknown2.json: chunks[0].ownrs: unknown key (muonplan plan does not write it)" \
  "$bin" execute --plan "$work/unknown2.json"
sed '0,/"lr": /s//"lr": 0.5,\n  "lr": /' "$work/p.json" > "$work/dup.json"
line="$(grep -n '"lr": 0.5' "$work/dup.json" | cut -d: -f1)"
expect "plan duplicate key" 2 "muonplan: rank 0: $work/dup.json:$((line + 1)):3: optimizer_config.adamw.lr: given twice, at lines $line and $((line + 1))" \
  "$bin" execute --plan "$work/dup.json"

# --- Item 8: execute flags -----------------------------------------------------------------
expect "inject-nonfinite nope:zz" 2 "muonplan: rank 0: --inject-nonfinite: expected NAME:STEP with STEP a positive integer, got 'nope:zz'" \
  "$bin" execute --plan "$work/p.json" --inject-nonfinite nope:zz
expect "comm-timeout nan" 2 "--comm-timeout: expected seconds in [1, 1e6], got 'nan'" \
  "$bin" execute --plan "$work/p.json" --comm-timeout nan
expect "steps 10^20" 2 "--steps: expected an integer in [1, 1000000000], got '99999999999999999999'" \
  "$bin" execute --plan "$work/p.json" --steps 99999999999999999999
expect "steps 0" 2 "--steps: expected an integer in [1, 1000000000], got '0'" \
  "$bin" execute --plan "$work/p.json" --steps 0

# --- Item 8: checkpoint refusals at resume exit 2 ------------------------------------------
timeout 60 "$bin" execute --plan "$work/p.json" --checkpoint "$work/ck" >/dev/null 2>"$work/err" \
  || bad "save: $(cat "$work/err")"
damaged() {  # damaged NAME: a copy of the checkpoint to damage
  rm -rf "$work/$1"; cp -r "$work/ck" "$work/$1"; echo "$work/$1"
}
# Another model (micro-dense's tensors are smaller): refused naming the first tensor that
# differs. bf16 momentum resumed as fp32: refused naming the entry (fp32 into bf16 loads).
plan_micro "$work/pm.json"
expect "resume another model" 2 "muonplan: rank 0: $work/ck/manifest.json: tensors: the checkpoint is of another model: model.embed_tokens.weight has shape [1000,250] there, [200,64] here (a checkpoint loads into plans of the same tensors and shapes)" \
  "$bin" execute --plan "$work/pm.json" --resume "$work/ck"
"$bin" plan --model models/tiny-dense.yaml $T --nodes 1 --gpus-per-node 1 --offload none \
  --bf16-momentum --out "$work/p16.json" >/dev/null
timeout 60 "$bin" execute --plan "$work/p16.json" --resume "$work/ck" --checkpoint "$work/ck16" \
  >/dev/null 2>"$work/err" && ok || bad "fp32 momentum resumed as bf16: $(cat "$work/err")"
expect "resume bf16 as fp32" 2 "muonplan: rank 0: $work/ck16/rank-00000.safetensors: model.layers.0.self_attn.qkv_proj.weight/momentum: bf16 in the checkpoint, fp32 in this plan; widening cannot restore the bits bf16 dropped: resume it with --bf16-momentum" \
  "$bin" execute --plan "$work/p.json" --resume "$work/ck16"
d="$(damaged torn)"; size="$(stat -c %s "$d/rank-00000.safetensors")"; truncate -s 100 "$d/rank-00000.safetensors"
expect "resume torn" 2 "muonplan: rank 0: $d/rank-00000.safetensors: truncated or extended: 100 bytes, the manifest says $size" \
  "$bin" execute --plan "$work/p.json" --resume "$d"
d="$(damaged flipped)"
"$py" -c "
f = open('$d/rank-00000.safetensors', 'r+b'); f.seek(-5, 2); b = f.read(1); f.seek(-5, 2)
f.write(bytes([b[0] ^ 16]))"
timeout 60 "$bin" execute --plan "$work/p.json" --resume "$d" >/dev/null 2>"$work/err"
rc=$?; [ $rc = 2 ] && [ "$(wc -l <"$work/err")" = 1 ] &&
  grep -q "^muonplan: rank 0: $d/rank-00000.safetensors: checksum mismatch: fnv1a-64 " "$work/err" && ok ||
  bad "resume flipped: exit $rc: $(cat "$work/err")"
d="$(damaged nomanifest)"; rm "$d/manifest.json"
expect "resume without manifest" 2 "muonplan: rank 0: $d/manifest.json: file: cannot be read" \
  "$bin" execute --plan "$work/p.json" --resume "$d"
d="$(damaged outside)"
"$py" -c "
import json; p = '$d/manifest.json'; m = json.load(open(p))
m['ranks'][0]['file'] = '../ck/rank-00000.safetensors'; json.dump(m, open(p, 'w'))"
expect "resume file outside" 2 "muonplan: rank 0: $d/manifest.json: ranks[0].file: expected \"rank-00000.safetensors\", got \"../ck/rank-00000.safetensors\"" \
  "$bin" execute --plan "$work/p.json" --resume "$d"
d="$(damaged md5)"
"$py" -c "
import json; p = '$d/manifest.json'; m = json.load(open(p))
m['checksum'] = 'md5'; json.dump(m, open(p, 'w'))"
expect "resume unknown checksum" 2 "muonplan: rank 0: $d/manifest.json: checksum: expected \"fnv1a-64\", got \"md5\"" \
  "$bin" execute --plan "$work/p.json" --resume "$d"

# --- Item 10: duplicate keys in YAML; non-UTF-8 names --------------------------------------
sed 's/^num_layers: 5/num_layers: 5\nnum_layers: 7/' models/tiny-dense.yaml > "$work/dup.yaml"
expect "model YAML duplicate" 2 "$work/dup.yaml:10:1: num_layers: given twice, at lines 9 and 10" \
  "$bin" inspect --model "$work/dup.yaml"
sed 's/^max_nodes: 2/max_nodes: 2\nmax_nodes: 64/' topologies/cpu-ci.yaml > "$work/dup-topo.yaml"
n="$(grep -n '^max_nodes: 64' "$work/dup-topo.yaml" | cut -d: -f1)"
expect "topology YAML duplicate" 2 "$work/dup-topo.yaml:$n:1: max_nodes: given twice, at lines $((n - 1)) and $n" \
  "$bin" topology --topology "$work/dup-topo.yaml"
printf 'tokens_per_step: 1048576\nseq_len: 4096\nseq_len: 8192\n' > "$work/dup-workload.yaml"
expect "workload YAML duplicate" 2 "$work/dup-workload.yaml:3:1: seq_len: given twice, at lines 2 and 3" \
  "$bin" plan --model $M --workload "$work/dup-workload.yaml"
# HF config.json: not our format, transformers takes the last value: a warning, exit 0.
hf=tests/data/hf/glm-4.5-air.json
"$py" - "$hf" "$work/hf-dup.json" <<'EOF'
import sys
s = open(sys.argv[1]).read()
i = s.index('"vocab_size"')
open(sys.argv[2], "w").write(s[:i] + '"vocab_size": 12,\n  ' + s[i:])
EOF
n="$(grep -n '"vocab_size": 12' "$work/hf-dup.json" | cut -d: -f1)"
expect "HF duplicate warns" 0 "muonplan: warning: $work/hf-dup.json:$((n + 1)):3: vocab_size: given twice, at lines $n and $((n + 1)); the last value is used" \
  "$bin" inspect --model "$work/hf-dup.json"
printf 'name: tiny\xff\n' > "$work/name.yaml"; sed '/^name:/d' models/tiny-dense.yaml >> "$work/name.yaml"
for cmd in "inspect --json" "plan --json" "report --nodes 1 --out $work/r"; do
  expect "non-UTF-8 name: $cmd" 2 "$work/name.yaml:1:7: name: is not valid UTF-8" \
    "$bin" ${cmd%% *} --model "$work/name.yaml" ${cmd#* }
done

# --- Item 8 and 10: metrics files ----------------------------------------------------------
metrics=tests/data/calibration/cpu/dense-full.metrics.json
edit_metrics() {  # edit_metrics OUT PYTHON: the metrics as `m`
  "$py" - "$metrics" "$1" "$2" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
m["plan"] = "dense-full.plan.json"
exec(sys.argv[3])
json.dump(m, open(sys.argv[2], "w"), indent=1)
EOF
  cp tests/data/calibration/cpu/dense-full.plan.json "$work/"
}
edit_metrics "$work/m308.json" 'm["measured"]["optimizer_step_s"] = 1e308'
edit_metrics "$work/m9.json" 'm["schema"] = "muonplan.metrics/9"'
edit_metrics "$work/mneg.json" 'm["measured"]["busy_s"]["gpu"] = -1.5'
edit_metrics "$work/mstr.json" 'm["measured"]["gpu_peak_gib"] = "many"'
declare -A why=(
  [m308]="measured.optimizer_step_s: expected a number in [0, 1e18], got 1e+308"
  [m9]="schema: expected muonplan.metrics/2, got 'muonplan.metrics/9'"
  [mneg]="measured.busy_s.gpu: expected a number in [0, 1e18], got -1.5"
  [mstr]="measured.gpu_peak_gib: expected a number, got \"many\"")
for m in m308 m9 mneg mstr; do
  expect "report --metrics $m" 2 "$work/$m.json: ${why[$m]}" \
    "$bin" report --model $M --nodes 1 --metrics "$work/$m.json" --out "$work/r"
  expect "calibrate --metrics $m" 2 "$work/$m.json: ${why[$m]}" \
    "$bin" calibrate --metrics "$work/$m.json" $T
done
edit_metrics "$work/m1.json" 'pass'
sed '0,/"gpu_peak_gib": /s//"gpu_peak_gib": 1,\n  "gpu_peak_gib": /' "$work/m1.json" > "$work/mdup.json"
n="$(grep -n '"gpu_peak_gib": 1,' "$work/mdup.json" | cut -d: -f1)"
expect "metrics duplicate key" 2 "$work/mdup.json:$((n + 1)):3: measured.gpu_peak_gib: given twice, at lines $n and $((n + 1))" \
  "$bin" calibrate --metrics "$work/mdup.json" $T


# What plan writes execute reads (issue 46 item 15): memory_gib 1e300 was written as null and a
# bandwidth of 1e-300 made figures past 1e18, both refused by execute after plan exit 0. One
# rule, the plan's figures within [0, 1e18] (kMaxMetric), for the topology, the flags and the
# plan written.
sed 's/memory_gib: .*/memory_gib: 1e300/' topologies/cpu-ci.yaml >"$work/mem.yaml"
line="$(grep -n 'memory_gib' "$work/mem.yaml" | cut -d: -f1)"
big="must be at most 931322574 GiB (1e+18 bytes, the bound on every figure a plan and its metrics hold), got 1e+300"
expect "memory_gib 1e300" 2 "$work/mem.yaml:$line:17: node.gpu.memory_gib: $big" \
  "$bin" plan --model tiny-dense --topology "$work/mem.yaml" --nodes 1 --out "$work/mem.json"
expect "--gpu-memory-gib 1e300" 2 "--gpu-memory-gib: $big" \
  "$bin" plan --model tiny-dense --topology topologies/cpu-ci.yaml --nodes 1 --gpu-memory-gib 1e300
expect "--host-ram-gib 1e300" 2 "--host-ram-gib: $big" \
  "$bin" plan --model tiny-dense --topology topologies/cpu-ci.yaml --nodes 1 --host-ram-gib 1e300
sed 's/hbm_gbps: .*/hbm_gbps: 1e-300/' topologies/cpu-ci.yaml >"$work/slow.yaml"
expect "hbm_gbps 1e-300" 2 "--topology: the plan's predicted.gpu_seconds_per_step would be 3.0813333333333338e+299, past 1e18: a figure of the topology is out of any hardware's range" \
  "$bin" plan --model tiny-dense --topology "$work/slow.yaml" --nodes 1 --gpus-per-node 1 --out "$work/slow.json"
finish
