#!/usr/bin/env bash
# Predicted equals allocated (docs/executor.md, "Measured against predicted"): on the CPU
# backend, which counts every byte it allocates and moves, the measured GPU peak, transient,
# all-to-all bytes and H2D/D2H bytes of one step equal the planner's prediction for the same
# plan, byte for byte: the GPU peak less the fixed terms (CUDA context, allocator slack: not
# allocator bytes). Covers tiny-dense and tiny-moe, every offload mode and staging, fp32 and bf16
# momentum, worlds of 1, 2, 3 and 4 ranks (each configuration on two of them, so that every
# world meets every mode).
#
# Each figure is one rank's: the planner's peak is the rank whose persistent plus transient
# bytes are largest, its terms that rank's; the executor reports the largest peak of any rank
# and the transient of that rank (ties: the larger transient).
source "$(dirname "$0")/lib.sh"

# check PLAN METRICS LABEL: compares byte figures (GiB and GB figures are bytes / 2^30 or 1e9,
# so the byte counts are compared after multiplying back; both sides are integers).
check() {
  "$py" - "$1" "$2" "$3" <<'PY' && ok || bad "$3"
import json, sys
plan, metrics, label = json.load(open(sys.argv[1])), json.loads(sys.argv[2]), sys.argv[3]
p, m = plan["predicted"], metrics["measured"]
b = p["breakdown"]
GiB, GB = 2.0**30, 1e9
def terms(key):  # named terms in bytes
    return {t["name"]: round(t["gib"] * GiB) for t in b[key]}
persistent, transient = terms("gpu_persistent_gib"), terms("gpu_transient_gib")
want = {
    "gpu_peak_bytes": sum(persistent.values()) + sum(transient.values()),
    "gpu_transient_bytes": sum(transient.values()),
    "alltoall_bytes_per_rank_max": round(p["alltoall_bytes_per_rank_max"]),
    "h2d_bytes_per_gpu": round(p["h2d_gb_per_gpu"] * GB),
    "d2h_bytes_per_gpu": round(p["d2h_gb_per_gpu"] * GB),
}
got = {
    "gpu_peak_bytes": round(m["gpu_peak_gib"] * GiB),
    "gpu_transient_bytes": round(m["gpu_transient_gib"] * GiB),
    "alltoall_bytes_per_rank_max": round(m["alltoall_bytes_per_rank_max"]),
    "h2d_bytes_per_gpu": round(m["h2d_gb_per_gpu"] * GB),
    "d2h_bytes_per_gpu": round(m["d2h_gb_per_gpu"] * GB),
}
diff = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
if diff:
    print(label + ": measured != predicted: " +
          ", ".join(f"{k} {g} vs {w} ({g - w:+d})" for k, (g, w) in diff.items()) +
          f"; persistent terms {persistent}, transient terms {transient}", file=sys.stderr)
    sys.exit(1)
PY
}

configs=("none" "optimizer" "optimizer --offload-staging chunked" "full")
i=0
for model in tiny-dense tiny-moe; do
  for mode in "${configs[@]}"; do
    for momentum in "" "--bf16-momentum"; do
      # Worlds in turn, two per configuration: 1+3, 2+4, ...
      for world in $((i % 4 + 1)) $(((i + 2) % 4 + 1)); do
        # Sanitizer runs (MUONPLAN_TEST_QUICK=1): tiny-moe's host pipelines on 3 ranks only.
        [ "$quick" = 1 ] && { [ "$world" != 3 ] || [ "$mode" = none ] || [ $model != tiny-moe ]; } &&
          continue
        label="$model $mode $momentum on $world"
        read -r -a flags <<<"$mode $momentum"
        "$bin" plan --model "models/$model.yaml" --topology topologies/cpu-ci.yaml --nodes 1 \
          --gpus-per-node "$world" --offload "${flags[@]}" --out "$work/p.json" >/dev/null \
          || { bad "$label: plan"; continue; }
        m="$(run "$world" "$work/p.json" --steps 1)" || { bad "$label: $(cat "$work/err")"; continue; }
        check "$work/p.json" "$m" "$label"
      done
      i=$((i + 1))
    done
  done
done
finish
