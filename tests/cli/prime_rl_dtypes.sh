#!/usr/bin/env bash
# prime-rl's [trainer.model] optimization_dtype and reduce_dtype are planned (issue 35 item 4):
# bf16 masters, gradient shards and AdamW moments (2 + 2 + 4 B per local param instead of
# 4 + 4 + 8), a bf16 reduce-scatter input and half the reduce-scatter traffic. Worked values on
# Qwen3-8B over 8 GPUs (tests/data/prime-rl/rl-dtypes.toml): 8.19e9 params / 8 ranks = 1.024e9
# local params, 3.814 GiB per 4 B.
set -u
source "$(dirname "$0")/lib.sh"
d=tests/data/prime-rl
export HF_HUB_CACHE="$work/hub" HF_HOME="$work/no-home"
mkdir -p "$HF_HUB_CACHE"
sed '/^optimization_dtype/d; /^reduce_dtype/d' $d/rl-dtypes.toml >"$work/fp32.toml"
for n in bf16:$d/rl-dtypes.toml fp32:$work/fp32.toml; do
  "$bin" plan --trainer-config "${n#*:}" --json >"$work/${n%%:*}.json" 2>"$work/${n%%:*}.err" && ok ||
    bad "${n%%:*}: exit $? $(cat "$work/${n%%:*}.err")"
done
grep -q "optimization_dtype\\|reduce_dtype" "$work/bf16.err" && bad "a dtype warned: $(cat "$work/bf16.err")" || ok
"$py" - "$work/fp32.json" "$work/bf16.json" <<'PYEOF' && ok || bad "dtype terms"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert (a["workload"]["optimization_dtype"], a["workload"]["reduce_dtype"]) == ("float32", "float32")
assert (b["workload"]["optimization_dtype"], b["workload"]["reduce_dtype"]) == ("bfloat16", "bfloat16")
def terms(d, group):
    return {t["name"]: t.get("gib", t.get("gb")) for t in d["predicted"]["breakdown"][group]}
pa, pb = terms(a, "gpu_persistent_gib"), terms(b, "gpu_persistent_gib")
n_gib = pa["params_fp32"] / 4  # GiB per byte per local param
assert abs(n_gib * 4 - 3.814) < 0.001, n_gib  # 8.19e9 / 8 params x 4 B
assert abs(pa["grads_fp32"] - 4 * n_gib) < 1e-9 and abs(pa["adamw_moments"] - 8 * n_gib) < 1e-9, pa
assert abs(pb["params_master_bf16"] - 2 * n_gib) < 1e-9, pb
assert abs(pb["grads_bf16"] - 2 * n_gib) < 1e-9 and abs(pb["adamw_moments"] - 4 * n_gib) < 1e-9, pb
wa, wb = terms(a, "gpu_workload_gib"), terms(b, "gpu_workload_gib")
# The timeline's terms at the allocated peak: FSDP2's reduce-scatter input in reduce_dtype.
assert abs(wb["fsdp2_rs_input"] * 2 - wa["fsdp2_rs_input"]) < 1e-9, (wa, wb)
ta, tb = terms(a, "traffic_per_gpu_gb"), terms(b, "traffic_per_gpu_gb")
assert abs(tb["fsdp_reduce_scatter"] * 2 - ta["fsdp_reduce_scatter"]) < 1e-6, (ta, tb)
assert ta["fsdp_all_gather"] == tb["fsdp_all_gather"], (ta, tb)  # bf16 weights either way
# The allocated figure falls by the persistent 8 B per param and half the reduce-scatter input:
# 22.60 -> 14.62 GiB (prime-rl's RL trainer's AC offload keeping one layer input, not five:
# 32 MiB; 22.65 -> 14.66 at backward_temporaries_fraction 0.6598; 22.69 -> 14.70 at
# 0.895 with no listed backward temporaries: the peak stays at layer 34's MLP backward, where
# the fraction's lump shrinks and SwiGLU's third gradient, 96 MiB, joins it:
# backward_temporaries.h).
fall = a["predicted"]["gpu_allocated_gib"] - b["predicted"]["gpu_allocated_gib"]
want = 8 * n_gib + wa["fsdp2_rs_input"] / 2
assert abs(fall - want) < 0.01, (fall, want)
assert abs(a["predicted"]["gpu_allocated_gib"] - 22.60) < 0.01, a["predicted"]["gpu_allocated_gib"]
assert abs(b["predicted"]["gpu_allocated_gib"] - 14.62) < 0.01, b["predicted"]["gpu_allocated_gib"]
# AdamW's kernel reads p, g, m, v and writes p, m, v: 7 x 2 B instead of 7 x 4 B per element,
# so the optimizer step (HBM-bound) halves: 6.64 -> 3.32 ms.
sa, sb = a["predicted"]["optimizer_step_s"], b["predicted"]["optimizer_step_s"]
assert abs(sb * 2 - sa) < 1e-9 and abs(sa - 0.006636) < 1e-5, (sa, sb)
PYEOF
# Under prime-rl's default optim_cpu_offload the state lives in pinned host RAM: it halves too
# (61.03 -> 30.51 GiB per node: 8 ranks x 8 -> 4 B x 1.024e9 params).
for n in bf16:$d/rl-dtypes.toml fp32:$work/fp32.toml; do
  sed 's/^optim_cpu_offload = false$/optim_cpu_offload = true/' "${n#*:}" >"$work/off-${n%%:*}.toml"
  "$bin" plan --trainer-config "$work/off-${n%%:*}.toml" --json >"$work/off-${n%%:*}.json" 2>/dev/null || bad "off-${n%%:*}"
done
"$py" - "$work/off-fp32.json" "$work/off-bf16.json" <<'PYEOF' && ok || bad "host state"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert a["offload"] == b["offload"] == "optimizer", (a["offload"], b["offload"])
ha, hb = ({t["name"]: t["gib"] for t in d["predicted"]["breakdown"]["host_per_node_gib"]} for d in (a, b))
assert abs(ha["optimizer_state"] - 61.03) < 0.01 and abs(hb["optimizer_state"] * 2 - ha["optimizer_state"]) < 1e-6, (ha, hb)
PYEOF
# --explain prints each term: the state by its dtype, live at the allocated peak (its bytes per
# element are checked above), and the traffic with its dtype.
"$bin" plan --trainer-config $d/rl-dtypes.toml --explain >"$work/explain.txt" 2>/dev/null
for t in "params_master_bf16.*tensor(s) live" "adamw_moments.*tensor(s) live" \
  "fsdp_reduce_scatter.*bfloat16 gradients (reduce_dtype)"; do
  grep -q "$t" "$work/explain.txt" && ok || bad "explain lacks '$t'"
done
# The emit writes the dtypes back, and the emitted file plans the same.
"$bin" plan --trainer-config $d/rl-dtypes.toml --nodes 2 --emit prime-rl >"$work/e.toml" 2>/dev/null
grep -qx 'optimization_dtype = "bfloat16"' "$work/e.toml" && ok || bad "emit lost optimization_dtype"
"$bin" plan --trainer-config "$work/e.toml" --json >"$work/e.json" 2>/dev/null &&
  json_check emit-replan "$work/e.json" 'assert d["workload"]["optimization_dtype"] == "bfloat16" and d["nodes"] == 2, d["workload"]'
# The flags, and their errors.
expect flag-bad 2 "--reduce-dtype: expected float32 or bfloat16, got 'fp16'" \
  "$bin" plan --trainer-config $d/rl-dtypes.toml --reduce-dtype fp16
expect flag-no-workload 2 "--optimization-dtype: applies to a training workload only (give --tokens-per-step and --seq-len, or --workload FILE); the optimizer step alone keeps fp32" \
  "$bin" plan --model models/qwen3-8b.yaml --nodes 1 --optimization-dtype bfloat16
printf '[model]\nname = "Qwen/Qwen3-8B"\noptimization_dtype = "float16"\n[data]\nbatch_size = 8\n' >"$work/f16.toml"
expect file-bad 2 "$work/f16.toml:3:22: model.optimization_dtype: expected float32 or bfloat16, got 'float16'" \
  "$bin" plan --trainer-config "$work/f16.toml"
finish
