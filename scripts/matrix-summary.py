#!/usr/bin/env python3
"""GPU reserved on prime-rl's benchmark matrix by model, GPU and mode, from `muonplan validate
--training-run ... --json` on stdin (scripts/validate-matrix.sh): for docs/validation.md."""
import collections
import json
import sys

d = json.load(sys.stdin)
runs = [r for r in d["runs"] if "gpu_gib" in r]
tol = d["summary"]["memory_tolerance"]


def name(r):
    return r["run"].rsplit("/", 1)[-1].removesuffix(".yaml")


def gpu(r):
    n = name(r)
    return next((g for g in ("a6000", "h100", "h200", "b200") if f"-{g}-" in n or n.endswith(g)),
                "b200" if "b200" in n else "?")


def model(r):
    return r["setting"].split(",")[0]


def mode(r):
    n = name(r)
    kind = "SFT" if "-sft-" in n else "RL"
    lora = "LoRA" if "lora" in n else "full"
    return f"{kind} {lora}"


print("| group | runs | within 10% | mean abs. error | worst |")
print("| --- | ---: | ---: | ---: | --- |")
for label, key in (("model", model), ("GPU", gpu), ("mode", mode)):
    groups = collections.defaultdict(list)
    for r in runs:
        groups[key(r)].append(r)
    for g, rs in sorted(groups.items()):
        errs = [r["gpu_gib"]["rel_error"] for r in rs]
        worst = max(rs, key=lambda r: abs(r["gpu_gib"]["rel_error"]))
        print(f"| {label} {g} | {len(rs)} | {sum(abs(e) <= tol for e in errs)} | "
              f"{100 * sum(abs(e) for e in errs) / len(errs):.1f}% | "
              f"{name(worst)} {100 * worst['gpu_gib']['rel_error']:+.1f}% |")
s = d["summary"]
print(f"| all | {s['gpu_runs']} | {s['gpu_within']} | "
      f"{100 * sum(abs(r['gpu_gib']['rel_error']) for r in runs) / len(runs):.1f}% | |")
