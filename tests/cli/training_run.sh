#!/usr/bin/env bash
# The runtime profile, the fit with headroom, and `muonplan calibrate --training-run`: the
# published GLM-4.5-Air run (tests/data/training-runs) refitted from the topology's defaults
# comes back to every measured figure; the written topology predicts what calibrate reported;
# bad runs and flags are refused with one line.
set -u
source "$(dirname "$0")/lib.sh"
run=tests/data/training-runs/glm-4.5-air-1n-full-muon.yaml
wl=(--tokens-per-step 1048576 --seq-len 131072 --ac full --ac-offload --lm-head-chunk 1024)
glm=(--model models/glm-4.5-air.yaml --nodes 1 --offload full --layout fsdp=8,cp=4,ep=8)

# The shipped topology with the fitted constants back at their defaults.
sed -e 's/^  backward_temporaries_fraction: .*/  backward_temporaries_fraction: 0/' \
    -e 's/^  host_per_rank_gib: .*/  host_per_rank_gib: 2.0/' \
    -e 's/^  host_pass_efficiency: .*/  host_pass_efficiency: 0.8/' \
    -e 's/^  model_flops_utilization: .*/  model_flops_utilization: 0.4/' \
    topologies/h200-ib.yaml >"$work/start.yaml"
expect calibrate 0 "" "$bin" calibrate --topology "$work/start.yaml" --training-run "$run" \
  --check "$run" --out "$work/cal.yaml" --json
cp "$work/out" "$work/fit.json"
json_check "residuals and constants" "$work/fit.json" '
fit = [r for r in d["residuals"] if not r["held_out"]]
assert sorted(r["figure"] for r in fit) == ["gpu_peak_gib", "host_ram_per_node_gib",
    "post_backward_optimizer_s", "training_step_s"], fit
assert all(abs(r["rel_error_after"]) < 0.005 for r in d["residuals"]), d["residuals"]
assert any(abs(r["rel_error_before"]) > 0.1 for r in fit), "the defaults already fit?"
c = d["constants"]
fitted = sorted(k for k, v in c.items() if v["fitted"])
# The allocator reserve is simulated, not fitted: the GPU peak fits the backward's unlisted
# temporaries, which the simulated allocator places.
assert fitted == ["calibration.model_flops_utilization", "pytorch.backward_temporaries_fraction",
    "pytorch.host_pass_efficiency", "pytorch.host_per_rank_gib"], fitted
for k in ["calibration.ep_comm_overlap", "pytorch.cuda_context_gib"]:
    assert not c[k]["fitted"] and c[k]["after"] == c[k]["before"] and "default" in c[k]["note"]
assert 0.05 <= c["calibration.model_flops_utilization"]["after"] <= 0.9'
# The written topology predicts the measured figures (what calibrate reported).
expect plan 0 "" "$bin" plan "${glm[@]}" "${wl[@]}" --topology "$work/cal.yaml" --json
json_check "calibrated plan" "$work/out" '
q = d["predicted"]
assert abs(q["gpu_peak_gib"] / 72.8 - 1) < 0.005, q["gpu_peak_gib"]
assert abs(q["training_step_s"] / 218.7 - 1) < 0.005, q["training_step_s"]
assert abs(q["host_ram_per_node_gib"] / 1426 - 1) < 0.005
assert d["runtime"] == {"name": "pytorch", "gpu_headroom": 0.05, "host_headroom": 0.05}
assert q["gpu_allocated_gib"] < q["gpu_reserved_gib"] < q["gpu_peak_gib"]
assert abs(q["fit_margin"] - min(1 - q["gpu_peak_gib"] / (d["limits"]["gpu_memory_gib"] * 0.95),
           1 - q["host_ram_per_node_gib"] / (d["limits"]["host_ram_per_node_gib"] * 0.95))) < 1e-9
assert d["decision"]["candidates"][0]["fit_margin"] == q["fit_margin"]'

# The same run given as a trainer config (what --emit toml writes) and the measured figures.
expect emit 0 "" "$bin" plan "${glm[@]}" "${wl[@]}" --emit toml
cp "$work/out" "$work/run.toml"
{ echo "model: glm-4.5-air"; echo "trainer_config: run.toml"; sed -n '/^measured:/,$p' "$run"; } \
  >"$work/from-toml.yaml"
expect calibrate-toml 0 "" "$bin" calibrate --topology "$work/start.yaml" \
  --training-run "$work/from-toml.yaml" --json
json_check "trainer config run" "$work/out" '
mine = {r["figure"]: r["predicted_before"] for r in d["residuals"]}
import os
ref = json.load(open(os.path.join(os.path.dirname(sys.argv[1]), "fit.json")))["residuals"]
ref = {r["figure"]: r["predicted_before"] for r in ref if not r["held_out"]}
assert mine == ref, (mine, ref)'

# --runtime muonplan: the executor's figures, no runtime terms; the table says the margin.
expect plan-muonplan 0 "" "$bin" plan "${glm[@]}" "${wl[@]}" --runtime muonplan --json
json_check "muonplan runtime" "$work/out" '
b = d["predicted"]["breakdown"]
assert b["gpu_reserve_gib"] == [] and b["gpu_runtime_gib"] == []
assert [t["name"] for t in b["gpu_fixed_gib"]] == ["cuda_context", "allocator_slack"]
assert d["runtime"]["gpu_headroom"] == 0'
expect table 0 "" "$bin" plan "${glm[@]}" "${wl[@]}" --gpu-headroom 0.6
grep -q "misses by" "$work/out" && ok || bad "table: no 'misses by' with 60% headroom"
expect bad-runtime 2 "--runtime: expected muonplan or pytorch, got 'jax'" \
  "$bin" plan "${glm[@]}" --runtime jax
expect bad-headroom 2 "--gpu-headroom: a fraction in [0, 1), got '1.5'" \
  "$bin" plan "${glm[@]}" --gpu-headroom 1.5

# Bad training runs: one line naming the file, line and field.
sed 's/gpu_peak_kind: reserved/gpu_peak_kind: nvidia-smi/' "$run" >"$work/bad.yaml"
EXPECT_MATCH=suffix expect bad-kind 2 \
  "measured.gpu_peak_kind: expected allocated or reserved, got 'nvidia-smi'" \
  "$bin" calibrate --training-run "$work/bad.yaml"
expect both 2 "--training-run: fits training runs or metrics, not both" \
  "$bin" calibrate --training-run "$run" --metrics x.json
expect neither 2 "--metrics: give --metrics or --training-run" "$bin" calibrate
finish
