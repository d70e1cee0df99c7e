#!/usr/bin/env bash
# A diagnostic, not shipped (tried in this commit, reverted in the next): would a host floor per
# decoder layer and pass (calibration.layer_host_us: the pass takes max(GPU time, it)) explain
# the matrix's short-row shortfall? bench/layer_overhead_scan.sh with that key in place of
# layer_overhead_us. Usage: bench/layer_host_scan.sh [BIN] [US ...]
# project allows per GPU kind (`training_gemm_efficiency` from 0.75, the attention efficiencies)
# over that kind's matrix runs with `muonplan calibrate --training-run`, and prints the refit
# constants, the matrix count (`validate`) and leave-one-model-out: each kind refit without one
# model's runs, which are then predicted. GPU peaks are left out of the fit (as the shipped fit).
# The cost is per layer and pass (forward, backward, and full AC's recompute: fixed_s in
# planner/src/cost/roofline.cc). Nothing shipped changes: it works on a copy of the data folder.
#
# Usage: bench/layer_overhead_scan.sh [BIN] [US ...]   (defaults: build/cli/muonplan; 0 500 1000 2000)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-$root/build/cli/muonplan}"
[ $# -gt 0 ] && shift
costs=("$@")
[ ${#costs[@]} -gt 0 ] || costs=(0 500 1000 2000)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
kinds=(h100-ib h200-ib rtx-a6000)

# The matrix's runs without their GPU peak, so the fit sees step times only.
mkdir -p "$work/runs"
for f in "$root"/tests/data/training-runs/matrix/*.yaml; do
  grep -v "gpu_peak" "$f" >"$work/runs/$(basename "$f")"
done
runs_of() {  # runs_of KIND [MODEL_TO_LEAVE_OUT | -MODEL_ONLY]
  for f in "$work"/runs/*.yaml; do
    grep -q "^topology: $1\$" "$f" || continue
    local m
    m="$(sed -n 's/^model: //p' "$f")"
    case "${2:-}" in
      "") echo "$f" ;;
      -*) [ "$m" = "${2#-}" ] && echo "$f" ;;
      *) [ "$m" != "$2" ] && echo "$f" ;;
    esac
  done
  return 0
}
# fit DATA KIND [MODEL_TO_LEAVE_OUT]: refit KIND's topology in DATA over its runs.
fit() {
  local t="$1/topologies/$2.yaml" args=()
  for f in $(runs_of "$2" "${3:-}"); do args+=(--training-run "$f"); done
  MUONPLAN_DATA_DIR="$1" "$bin" calibrate --topology "$t" "${args[@]}" --out "$t.fit" --force \
    >"$1/fit-$2.txt" 2>&1
  mv "$t.fit" "$t"
}
fitted() { sed -n 's/^ *\(training_gemm_efficiency\|attention_fa[23]_efficiency\): *\([0-9.]*\).*/\1 \2/p' "$1"; }

for us in "${costs[@]}"; do
  data="$work/data-$us"
  cp -rL "$root/build/share/muonplan" "$data"  # -L: its topologies/ links the source tree's
  for k in "${kinds[@]}"; do
    # The step-time fit from defaults: the `fitted:` list without its *_matrix section.
    sed -i -E "s/^calibration:.*/&\n  layer_host_us: $us/; /^fitted:/{s/ *[a-z0-9_]+_matrix,?//g; s/, *\]/]/}" \
      "$data/topologies/$k.yaml"
  done
  cp -r "$data" "$data-start"
  echo "== layer_host_us $us"
  for k in "${kinds[@]}"; do
    fit "$data" "$k"
    echo "  $k: $(fitted "$data/topologies/$k.yaml" | tr '\n' ' ')"
  done
  # The held-out B200 run carries h200-ib's fitted GEMM efficiency (as shipped) and the cost.
  eff="$(fitted "$data/topologies/h200-ib.yaml" | sed -n 's/^training_gemm_efficiency //p')"
  # (b200-ib takes h200_matrix from fitted.yaml: its own key, written here, overrides it.)
  sed -i -E "s/^calibration:.*/&\n  layer_host_us: $us\n  training_gemm_efficiency: $eff/" \
    "$data/topologies/b200-ib.yaml"
  MUONPLAN_DATA_DIR="$data" bash "$root/scripts/validate-matrix.sh" "$bin" >"$data/matrix.txt" || true
  echo "  held-out B200: $(grep '^bench-intellect-3-b200' "$data/matrix.txt" | awk '{print $4}')"
  echo "  matrix: $(tail -1 "$data/matrix.txt")"
  # tests/cli/step_order.sh's pairs (RL/SFT or LoRA/full, all else equal): how many out of order.
  MUONPLAN_DATA_DIR="$data" bash "$root/scripts/validate-matrix.sh" "$bin" --json >"$data/matrix.json" || true
  python3 - "$data/matrix.json" <<'PY'
import json, re, sys
rows = {}
for r in json.load(open(sys.argv[1]))["runs"]:
    m = re.match(r"(.+)-(a6000|h100|h200)-(\d+gpu)-(rl|sft)-(full|lora\d+)-(\d+k)-(\w+)-(fa\d|sdpa)-",
                 r["run"].rsplit("/", 1)[-1])
    if m and "step_s" in r:
        rows[m.groups()] = (r["step_s"]["measured"], r["step_s"]["predicted"])
keys, pairs, wrong = list(rows), 0, []
for i, a in enumerate(keys):
    for b in keys[i + 1:]:
        if [k for k in range(8) if a[k] != b[k]] in ([3], [4]):
            pairs += 1
            if (rows[a][0] > rows[b][0]) != (rows[a][1] > rows[b][1]):
                wrong.append((a, b))
print(f"  pairs out of the measured order: {len(wrong)} of {pairs}")
for a, b in wrong:  # MODEL GPU N: the differing field, measured and predicted seconds of each
    d = 3 if a[3] != b[3] else 4
    print(f"    pair: {a[0]} {a[1]} {a[2]} {a[5]} {a[d]} {rows[a][0]:.2f} (predicted {rows[a][1]:.2f}) "
          f"vs {b[d]} {rows[b][0]:.2f} (predicted {rows[b][1]:.2f})")
for r in json.load(open(sys.argv[1]))["runs"]:
    if "step_s" in r and abs(r["step_s"]["rel_error"]) > 0.15:
        print(f"    out: {r['run'].rsplit('/', 1)[-1][:-5]} {100 * r['step_s']['rel_error']:+.1f}%")
PY
  # Leave one model out, per GPU kind.
  within=0 total=0
  for k in "${kinds[@]}"; do
    for m in $(for f in $(runs_of "$k"); do sed -n 's/^model: //p' "$f"; done | sort -u); do
      # A constant one run alone determines is not fitted (calibrate), as in the shipped table.
      [ "$(runs_of "$k" "$m" | wc -l)" -ge 2 ] || continue
      lomo="$data-lomo"
      rm -rf "$lomo"
      cp -r "$data-start" "$lomo"
      fit "$lomo" "$k" "$m"
      args=()
      for f in $(runs_of "$k" "-$m"); do args+=(--training-run "$f"); done
      read -r w n < <(MUONPLAN_DATA_DIR="$lomo" "$bin" validate "${args[@]}" --json |
        python3 -c 'import json,sys; s=json.load(sys.stdin)["summary"]; print(s["step_within"], s["step_runs"])')
      within=$((within + w)) total=$((total + n))
      echo "  left out $k $m: $w of $n within 15% (GEMM efficiency refit $(fitted "$lomo/topologies/$k.yaml" | sed -n 's/^training_gemm_efficiency //p'))"
    done
  done
  echo "  leave-one-model-out: $within of $total within 15%"
done
