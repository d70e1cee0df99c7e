#!/usr/bin/env python3
"""prime-rl's time between training steps, recovered from the benchmark matrix's MFU.

The matrix (data/calibration/prime-rl-benchmarks.yaml) records two figures per run: step_s, the
trainer's `time/step` (rl/train.py: from after the weight broadcast to the step's logging), and
mfu_pct, `perf/mfu`. PerfCounter (trainer/perf.py) computes MFU over a sliding window of whole
loop iterations (time between successive count_tokens calls), so it also sees what runs between
steps: the RL trainer's weight broadcast at the top of the loop. With PerfCounter's own flop count
the MFU gives the iteration's time, and iteration - step_s is the time between steps.

PerfCounter's flops per token (trainer/perf.py, read for this script): full fine-tuning 6 x the
matmul parameters a token touches (q, k, v, o, MLP or the top-k experts and the router, LM head);
LoRA 4 x those + 6 x one adapter's parameters (the frozen base has no weight grads); attention
12 x layers x heads x (hidden / heads) x seq_len. Peak: 989e12 for H100 and H200; a name it does
not list (RTX A6000) falls back to A100's 312e12.

Prints each run's iteration and between-steps seconds. LoRA and SFT runs broadcast nothing (the
benchmark's LoRA runs have no active run; SFT has no broadcast), so their between-steps time checks
the method. --fit MODEL: the filesystem broadcast's rate (calibration.weight_broadcast_gbps,
data/calibration/fitted.yaml) by least squares over MODEL's full fine-tuning RL runs on H100 and
H200, each run's bytes being the planner's (2 x every parameter, bf16: `muonplan inspect`), and
the other full fine-tuning RL runs predicted with it. Usage:
scripts/between-steps-from-mfu.py [BENCHMARKS_YAML] [--json] [--fit MODEL [--bin MUONPLAN]]
"""
import json
import os
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HF = {"Qwen/Qwen3-0.6B": "qwen3-0.6b", "Qwen/Qwen3-4B-Instruct-2507": "qwen3-4b",
      "Qwen/Qwen3-30B-A3B-Instruct-2507": "qwen3-30b-a3b",
      "PrimeIntellect/INTELLECT-3": "glm-4.5-air"}
PEAK = {"H100 80GB HBM3": 989e12, "H200": 989e12, "RTX A6000": 312e12}
LORA_TARGETS = ("q", "k", "v", "o", "gate", "up", "down")


def active_mm_params(c):
    """PerfCounter.get_active_mm_params (GQA models)."""
    h, layers = c["hidden_size"], c["num_hidden_layers"]
    head_dim = c.get("head_dim") or h // c["num_attention_heads"]
    q = layers * h * c["num_attention_heads"] * head_dim
    kv = 2 * layers * h * c["num_key_value_heads"] * head_dim
    dense = sparse = 0
    if "first_k_dense_replace" in c:
        dense, sparse = c["first_k_dense_replace"], layers - c["first_k_dense_replace"]
    elif c.get("num_experts_per_tok"):
        sparse = layers
    else:
        dense = layers
    mlp = dense * 3 * c["intermediate_size"] * h
    moe_inter = c.get("moe_intermediate_size") or c["intermediate_size"]
    if c.get("n_shared_experts") or c.get("num_shared_experts"):
        mlp += sparse * (c.get("n_shared_experts") or c["num_shared_experts"]) * 3 * moe_inter * h
    if c.get("num_experts_per_tok"):
        mlp += sparse * c["num_experts_per_tok"] * 3 * moe_inter * h
        mlp += sparse * (c.get("n_routed_experts") or c.get("num_experts") or 0) * h
    return q + kv + q + mlp + c["vocab_size"] * h


def dense_adapter_params(c, rank):
    """One adapter of prime-rl's MultiLoRALinear on each target of a dense model: r x (in + out)."""
    h, layers = c["hidden_size"], c["num_hidden_layers"]
    head_dim = c.get("head_dim") or h // c["num_attention_heads"]
    qw, kvw, f = c["num_attention_heads"] * head_dim, c["num_key_value_heads"] * head_dim, c["intermediate_size"]
    shapes = [(h, qw), (h, kvw), (h, kvw), (qw, h), (h, f), (h, f), (f, h)]
    return layers * sum(rank * (i + o) for i, o in shapes)


def flops_per_token(c, run):
    attn = 12 * c["num_hidden_layers"] * c["hidden_size"] * run["seq_len"]  # 12 l h (hidden/h) s
    if not run.get("lora_rank"):
        return 6 * active_mm_params(c) + attn
    if c.get("num_experts_per_tok"):
        return None  # the expert adapters' count is not reproduced here
    return 4 * active_mm_params(c) + 6 * dense_adapter_params(c, run["lora_rank"]) + attn


_GEN = None


def matrix_file(run):
    """The run's training-run file under tests/data/training-runs/matrix/ (gen-matrix-runs.py)."""
    global _GEN
    if _GEN is None:
        import importlib.util
        spec = importlib.util.spec_from_file_location("gen", os.path.join(ROOT, "scripts/gen-matrix-runs.py"))
        _GEN = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_GEN)
    return _GEN.name(run)


def planned(rows, binary):
    """The planner's between-steps seconds of each row's training-run file (as shipped), from
    one `muonplan validate` of them all."""
    import subprocess
    paths = [os.path.join(ROOT, "tests/data/training-runs/matrix", r["run_file"]) for r in rows]
    args = [a for p in paths for a in ("--training-run", p)]
    out = subprocess.run([binary, "validate", *args, "--json"], capture_output=True, text=True).stdout
    return {os.path.basename(r["run"]): r["between_steps_s"] for r in json.loads(out)["runs"]}


def fit(rows, model, binary):
    """Least squares of between = bytes / rate over `model`'s runs; each run as the planner,
    with the shipped rate, predicts it."""
    import subprocess
    params = {}
    for m in {r["model"] for r in rows}:
        out = subprocess.run([binary, "inspect", "--model", m, "--json"], check=True,
                             capture_output=True, text=True).stdout
        params[m] = json.loads(out)["params_total"]
    full = [r for r in rows if r["type"] == "rl" and not r["lora_rank"]
            and r["gpu"] != "RTX A6000" and r["date"] < "2026-06"]
    fit_rows = [r for r in full if r["model"] == model]
    gb = lambda r: 2 * params[r["model"]] / 1e9  # every parameter in bf16 (weight_broadcast.h)
    x = sum(gb(r) * r["between_steps_s"] for r in fit_rows) / sum(gb(r) ** 2 for r in fit_rows)
    if not 0.1 <= 1 / x <= 100:  # the constant's bound (data/calibration/fitted.yaml)
        sys.exit(f"weight_broadcast_gbps {1 / x:.4g} is outside its bound [0.1, 100] GB/s")
    print(f"weight_broadcast_gbps {1 / x:.4g}: least squares over {len(fit_rows)} {model} runs")
    print("each run as planned (muonplan validate --training-run, the shipped topology):")
    plan = planned(full, binary)
    for r in full:
        pred = plan[r["run_file"]]
        tag = "fit" if r["model"] == model else "held out"
        print(f"  {r['model']:14s} {r['gpu']:15s} {r['gpus']}x {r['seq_len']:6d} {r['ac']:9s} "
              f"{gb(r):7.3f} GB: derived {r['between_steps_s']:7.3f} s, planned {pred:7.3f} s "
              f"({100 * (pred / r['between_steps_s'] - 1):+.1f}%, {tag})")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    opts = {k: sys.argv[i + 1] for i, k in enumerate(sys.argv[:-1]) if k in ("--fit", "--bin")}
    args = [a for a in args if a not in opts.values()]
    path = args[0] if args else os.path.join(ROOT, "data/calibration/prime-rl-benchmarks.yaml")
    rows = []
    for run in yaml.safe_load(open(path))["runs"]:
        if run.get("oom") or run.get("mfu_pct") is None or run["model"] not in HF:
            continue
        c = json.load(open(os.path.join(ROOT, "tests/data/hf", HF[run["model"]] + ".json")))
        fl = flops_per_token(c, run)
        if fl is None:
            continue
        tokens = run["gpus"] * run["micro_batches"] * run["seq_len"]
        iteration = fl * tokens / (run["mfu_pct"] / 100 * PEAK[run["gpu"]] * run["gpus"])
        rows.append({"run_file": matrix_file(run), "model": HF[run["model"]], "gpu": run["gpu"], "gpus": run["gpus"],
                     "type": run["type"], "lora_rank": run.get("lora_rank") or 0,
                     "seq_len": run["seq_len"], "ac": run["ac"], "date": str(run["date"]),
                     "step_s": run["step_s"], "iteration_s": round(iteration, 3),
                     "between_steps_s": round(iteration - run["step_s"], 3)})
    if "--json" in sys.argv:
        json.dump(rows, sys.stdout, indent=1)
        return
    if "--fit" in opts:
        fit(rows, opts["--fit"], opts.get("--bin", os.path.join(ROOT, "build/cli/muonplan")))
        return
    print(f"{'model':14s} {'gpu':15s} {'n':>2s} {'type':4s} {'lora':>4s} {'seq':>6s} {'ac':9s} "
          f"{'date':10s} {'step s':>7s} {'iter s':>7s} {'between':>8s}")
    for r in rows:
        print(f"{r['model']:14s} {r['gpu']:15s} {r['gpus']:2d} {r['type']:4s} {r['lora_rank']:4d} "
              f"{r['seq_len']:6d} {r['ac']:9s} {r['date']:10s} {r['step_s']:7.2f} "
              f"{r['iteration_s']:7.2f} {r['between_steps_s']:+8.2f}")


if __name__ == "__main__":
    main()
