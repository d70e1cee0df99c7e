#!/usr/bin/env bash
# bench/trainer_ops_torch.py (bench/gpu_check.sh's trainer_ops stage): the linears it times are
# `muonplan inspect`'s shape groups, each with its forward, input-grad and weight-grad GEMM and
# their FLOPs; the attention FLOPs are the planner's (forward 2 S^2 H d causal, backward 2.5
# times); its head defaults are Qwen3-4B's (models/qwen3-4b.yaml); a bad --inspect or head count
# is refused. With torch installed (Debian's python3-torch), the CPU rehearsal's figures are
# checked too: every linear timed, the LoRA path the per-slot loop (no compute capability 9.x),
# TFLOP/s and fractions of peak that follow from the times.
set -u
source "$(dirname "$0")/lib.sh"
script=bench/trainer_ops_torch.py
"$bin" inspect --model models/qwen3-4b.yaml --json >"$work/inspect.json" 2>"$work/err" && ok ||
  bad "inspect: $(cat "$work/err")"
"$py" "$script" --inspect "$work/inspect.json" --list --tokens 1024 --seq 2048,4096 \
  --out "$work/list.json" 2>"$work/err" && ok || bad "--list: $(cat "$work/err")"
json_check "--list: linears, GEMMs and attention FLOPs" "$work/list.json" '
ins = json.load(open(sys.argv[1].replace("list.json", "inspect.json")))
want = [[g["rows"], g["cols"]] for g in ins["shape_groups"]]
assert d["schema"] == "muonplan.trainer_ops/1", d["schema"]
assert d["linears"] == want and len(want) == 5, (d["linears"], want)
ops = d["gemm_ops"]
assert len(ops) == 3 * len(want), len(ops)
for (out, inp), f, i, w in zip(want, ops[0::3], ops[1::3], ops[2::3]):
    assert (f["what"], f["m"], f["n"], f["k"]) == ("forward", 1024, out, inp), f
    assert (i["what"], i["m"], i["n"], i["k"]) == ("input_grad", 1024, inp, out), i
    assert (w["what"], w["m"], w["n"], w["k"]) == ("weight_grad", out, inp, 1024), w
    for o in (f, i, w):
        assert o["flops"] == 2 * 1024 * out * inp, o
# Qwen3-4B: 32 query heads of 128.
assert d["attention_flops"] == [
    {"seq": s, "forward": 2 * s * s * 32 * 128, "backward": 2.5 * 2 * s * s * 32 * 128}
    for s in (2048, 4096)], d["attention_flops"]
assert "gemm" not in d and "lora" not in d, "--list measured something"
'
"$py" - "$script" models/qwen3-4b.yaml <<'EOF' && ok || bad "head defaults are not models/qwen3-4b.yaml's"
import re, sys, yaml
text = open(sys.argv[1]).read()
att = yaml.safe_load(open(sys.argv[2]))["attention"]
for flag, key in (("--heads", "num_heads"), ("--kv-heads", "num_kv_heads"), ("--head-dim", "head_dim")):
    m = re.search(r'add_argument\("%s", type=int, default=(\d+)\)' % flag, text)
    assert m and int(m.group(1)) == att[key], (flag, m and m.group(1), att[key])
EOF
echo '{"model": "x"}' >"$work/bad.json"
EXPECT_MATCH=suffix expect "no shape groups" 1 \
  "no shape_groups: pass \`muonplan inspect --model M --json\`" \
  "$py" "$script" --inspect "$work/bad.json" --list
EXPECT_MATCH=suffix expect "heads not a multiple of kv heads" 1 \
  "--heads must be a positive multiple of --kv-heads" \
  "$py" "$script" --inspect "$work/inspect.json" --list --heads 30 --kv-heads 8

# gpu_check_report.py sets the planner's LoRA terms per layer beside each measured point: the
# plan gpu_check.sh writes per row count, (adapter_gemm + lora_wrapper) / layers, in ms.
for t in 256 512; do
  "$bin" plan --model models/qwen3-4b.yaml --topology topologies/h200-ib.yaml --nodes 1 \
    --gpus-per-node 1 --layout fsdp=1 --optimizer adamw --offload none --seq-len "$t" \
    --tokens-per-step "$t" --ac full --trainer rl --lora-rank 16 --lora-adapters 4 \
    --lora-active-runs 0 --json >"$work/trainer_ops_plan_$t.json" 2>/dev/null || bad "plan at $t rows"
done
"$py" - "$work" <<'PY' && ok || bad "gpu_check_report: the planner's LoRA layer beside the measured"
import json, math, os, sys
sys.path.insert(0, "bench")
from gpu_check_report import planner_lora_layer
w = sys.argv[1]
ops = {"layers": 36, "lora_layer": {"by_tokens": [{"tokens": 256, "extra_ms": 2.0},
                                                 {"tokens": 512, "extra_ms": 3.0},
                                                 {"tokens": 1024, "extra_ms": 5.0}]}}
planner_lora_layer(ops, w)
for p in ops["lora_layer"]["by_tokens"]:
    path = os.path.join(w, "trainer_ops_plan_%d.json" % p["tokens"])
    if not os.path.exists(path):
        assert "planner_ms" not in p, p  # no plan at that count: nothing set beside it
        continue
    terms = {t["name"]: t["s"] for t in json.load(open(path))["predicted"]["breakdown"]["training_step_s"]}
    want = (terms["adapter_gemm"] + terms["lora_wrapper"]) / 36 * 1e3
    assert want > 0 and math.isclose(p["planner_ms"], want), (p, want)
    assert math.isclose(p["measured_over_planner"], p["extra_ms"] / want), p
PY
if "$py" -c "import torch" 2>/dev/null; then
  OMP_NUM_THREADS=2 "$py" "$script" --inspect "$work/inspect.json" --device cpu --quick \
    --warmup 1 --reps 1 --peak-tflops 2 --out "$work/cpu.json" 2>"$work/err" && ok ||
    bad "CPU rehearsal: $(cat "$work/err")"
  json_check "CPU rehearsal figures" "$work/cpu.json" '
assert d["device"] == "cpu" and d["tokens"] == 256, (d["device"], d["tokens"])
assert len(d["gemm"]) == 15 and len(d["lora"]) == 10 and len(d["attention"]) == 1
for g in d["gemm"]:
    assert g["ms"] > 0 and math.isclose(g["tflops"], g["flops"] / (g["ms"] * 1e-3) / 1e12), g
    assert math.isclose(g["fraction_of_peak"], g["tflops"] / 2), g
for r, lin in zip(d["lora"], d["linears"] * 2):
    assert r["linear"] == lin and r["path"] == "loop" and r["rank"] == 16 and r["slots"] == 4, r
    assert math.isclose(r["extra_ms"], r["lora_forward_backward_ms"] - r["base_forward_backward_ms"]), r
    assert r["lora_forward_backward_ms"] > 0 and r["base_forward_backward_ms"] > 0, r
# The layer under full AC: every linear forward + backward and forward again, at 256 and 512
# rows, and the line through them.
layer = d["lora_layer"]
assert [p["tokens"] for p in layer["by_tokens"]] == [256, 512], layer
# The Qwen3-4B layer: q, k, v, o, gate, up, down; k and v, gate and up of one shape each.
assert d["per_layer"] == [2, 1, 1, 1, 2] and d["layers"] == 36, (d["per_layer"], d["layers"])
for p in layer["by_tokens"]:
    rows = [r for r in d["lora"] if r["tokens"] == p["tokens"]]
    assert p["linears"] == 7 and len(rows) == 5, (p, rows)
    assert math.isclose(p["extra_ms"], sum(m * (r["extra_ms"] + r["extra_forward_ms"])
                                           for m, r in zip(d["per_layer"], rows))), p
lo, hi = layer["by_tokens"]
assert math.isclose(layer["us_per_token"], (hi["extra_ms"] - lo["extra_ms"]) / 256 * 1e3), layer
assert math.isclose(layer["fixed_ms"] + layer["us_per_token"] * 256e-3, lo["extra_ms"]), layer
a = d["attention"][0]
assert a["seq"] == 128 and a["heads"] == 32 and a["kv_heads"] == 8, a
assert math.isclose(a["forward_tflops"], 2 * 128 * 128 * 32 * 128 / (a["forward_ms"] * 1e-3) / 1e12), a
assert d["token_loop"]["tokens"] == 512 and d["token_loop"]["us_per_token"] > 0, d["token_loop"]
assert d["sync"]["us_per_call"] > 0, d["sync"]
'
else
  echo "no torch for $py: the CPU rehearsal not run (apt-get install python3-torch)"
fi
finish
