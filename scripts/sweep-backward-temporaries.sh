#!/usr/bin/env bash
# The one fitted constant of the GPU peak, pytorch.backward_temporaries_fraction (what a layer's
# backward holds beyond the timeline's tensors, its listed backward temporaries included:
# planner/src/cost/backward_temporaries.h), on prime-rl's benchmark matrix (scripts/validate-matrix.sh): for each value of a grid, every run's GPU
# reserved error with every bundled topology set to it (copies under a temporary data dir; the
# tree is not touched); then the value each fit picks (most runs within 10%, then the smallest
# mean |error|) on all runs, and leaving out one model or one GPU at a time, with the held-out
# runs' figures at the value fitted without them (docs/validation.md).
# Usage: scripts/sweep-backward-temporaries.sh [BIN] (a few minutes: one matrix per value)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-$root/build/cli/muonplan}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
grid=(0 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9 1.0)
for f in "${grid[@]}"; do
  d="$work/data-$f"
  cp -rL "$root/build/share/muonplan" "$d"  # -L: real copies, never the tree's own files
  # The one value every bundled topology takes (fitted.yaml's every_gpu), and any topology's own.
  sed -i -E "s/^( *backward_temporaries_fraction:) [0-9.]*/\1 $f/" \
    "$d"/calibration/fitted.yaml "$d"/topologies/*.yaml
  MUONPLAN_DATA_DIR="$d" bash "$root/scripts/validate-matrix.sh" "$bin" --json >"$work/$f.json" || true
done
python3 - "$work" "${grid[@]}" <<'PY'
import collections, json, sys
work, grid = sys.argv[1], sys.argv[2:]
err = collections.defaultdict(dict)
for f in grid:
    for r in json.load(open(f"{work}/{f}.json"))["runs"]:
        if "gpu_gib" in r:
            err[r["run"].rsplit("/", 1)[-1]][f] = 100 * r["gpu_gib"]["rel_error"]
runs = sorted(err)
model = lambda r: next(m for m in ("glm-4.5-air", "qwen3-0.6b", "qwen3-30b-a3b", "qwen3-4b",
                                   "bench-intellect-3") if r.startswith(m))
gpu = lambda r: next(g for g in ("a6000", "h100", "h200", "b200") if g in r)
within = lambda rs, f: sum(abs(err[r][f]) <= 10 for r in rs)
mean = lambda rs, f: sum(abs(err[r][f]) for r in rs) / len(rs)
best = lambda rs: min(grid, key=lambda f: (-within(rs, f), mean(rs, f)))
print("| value | within 10% | mean abs. error |")
print("| ---: | ---: | ---: |")
for f in grid:
    print(f"| {f} | {within(runs, f)} of {len(runs)} | {mean(runs, f):.2f}% |")
print(f"\nFitted on all runs: {best(runs)}.\n")
print("| left out | fitted on the rest | held-out runs within 10% | held-out mean abs. error |")
print("| --- | ---: | ---: | ---: |")
for label, key in (("model", model), ("GPU", gpu)):
    total = 0
    for g in sorted({key(r) for r in runs}):
        out = [r for r in runs if key(r) == g]
        f = best([r for r in runs if key(r) != g])
        total += within(out, f)
        print(f"| {label} {g} | {f} | {within(out, f)} of {len(out)} | {mean(out, f):.1f}% |")
    print(f"| every {label} in turn | | {total} of {len(runs)} | |")
PY
