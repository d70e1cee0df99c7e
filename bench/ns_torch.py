#!/usr/bin/env python3
"""PyTorch's Newton-Schulz beside ours, on the same inputs (bench/gpu_check.sh, stage `torch`).

    ns_torch.py --dump DIR [--device auto|cuda|cpu] [--warmup 1] [--reps 10] [--out FILE]

DIR is what `muonplan bench ns --dump DIR --variant both` wrote: ns.json (our times, the
schedule's coefficients, file names), each shape's bf16 input and our outputs. For each shape
this times PyTorch's NS in bf16 as the reference implementations write it (dion's
zeropower_via_newtonschulz5: the adds folded into the GEMMs with baddbmm, the same schedule,
normalization and orientation as ours), median of --reps calls after --warmup (CUDA events on
a GPU, perf_counter on the CPU), and runs the same iteration in fp64 on the same input as the
truth that ours and torch's bf16 result are measured against. Like for like with ours: one
warm-up call per shape by default (as `muonplan bench ns`), and on CUDA torch's bf16 GEMMs may
not reduce in reduced precision (allow_bf16_reduced_precision_reduction = False), as our cuBLAS
calls forbid it (CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION):

    rel_err = ||X - X_fp64||_F / ||X_fp64||_F   over the whole batch (and the worst matrix)

Writes one JSON (stdout, or --out): per shape torch_ms, ours_plain_ms / ours_symmetric_ms,
ratio_plain / ratio_symmetric (ours / torch: below 1 means ours is faster), the same against
torch_wall_ms (the host clock around a synchronized call, as ours is timed), and the errors.
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import torch


def newton_schulz(x, steps, norm_scale, eps):
    """NS on a [batch, rows, cols] tensor in its own dtype, as ours: the wide orientation, the
    Frobenius norm per matrix, then per step A = X X^T, B = b A + c A A, X = a X + B X."""
    transpose = x.shape[-2] > x.shape[-1]
    if transpose:
        x = x.mT
    x = x / (x.norm(dim=(-2, -1), keepdim=True) * norm_scale + eps)
    for a, b, c in steps:
        am = x @ x.mT
        bm = torch.baddbmm(am, am, am, beta=b, alpha=c)
        x = torch.baddbmm(x, bm, x, beta=a, alpha=1.0)
    if transpose:
        x = x.mT
    return x


def load_bf16(path, shape):
    raw = np.fromfile(path, dtype=np.int16)
    expected = shape[0] * shape[1] * shape[2]
    if raw.size != expected:
        raise ValueError(f"{path}: {raw.size} values, expected {expected}")
    return torch.from_numpy(raw.reshape(shape)).view(torch.bfloat16)


def rel_err(x, ref):
    """Whole-batch and worst-matrix relative Frobenius error of x against ref (fp64)."""
    d = x.double() - ref
    whole = (d.norm() / ref.norm()).item()
    per = (d.norm(dim=(-2, -1)) / ref.norm(dim=(-2, -1))).max().item()
    return whole, per


def time_calls(fn, device, warmup, reps):
    """Median seconds of reps calls after warmup: (CUDA events, host clock around the call and
    its synchronization); on the CPU both are the host clock."""
    for _ in range(warmup):
        fn()
    events, wall = [], []
    if device.type == "cuda":
        torch.cuda.synchronize()
    for _ in range(reps):
        t0 = time.perf_counter()
        if device.type == "cuda":
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            events.append(start.elapsed_time(end) / 1e3)
        else:
            fn()
        wall.append(time.perf_counter() - t0)
    return statistics.median(events or wall), statistics.median(wall)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dump", required=True)
    ap.add_argument("--device", default="auto", choices=["auto", "cuda", "cpu"])
    ap.add_argument("--warmup", type=int, default=1)  # muonplan bench ns: one warm-up call
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--out")
    a = ap.parse_args()
    with open(os.path.join(a.dump, "ns.json")) as f:
        ours = json.load(f)
    name = a.device
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(name)
    steps = [tuple(s) for s in ours["schedule_steps"]]
    norm_scale, eps = ours["norm_scale"], ours["eps"]
    result = {
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "timer": "cuda events" if device.type == "cuda" else "time.perf_counter",
        "warmup": a.warmup,
        "reps": a.reps,
        "ours_backend": ours["backend"],
        "ours_timer": "host clock around a synchronized call (muonplan bench ns)",
        "schedule": ours["schedule"],
        "schedule_steps": ours["schedule_steps"],
        "torch_impl": "bf16, A = X X^T; B = baddbmm(A, A, A, beta=b, alpha=c); "
                      "X = baddbmm(X, B, X, beta=a, alpha=1)",
        "shapes": [],
    }
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
        result["allow_bf16_reduced_precision_reduction"] = \
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction
    rows = {}
    for row in ours["shapes"]:
        key = (row["batch"], row["rows"], row["cols"])
        rows.setdefault(key, {})[row["variant"]] = row
    for key, variants in rows.items():
        first = next(iter(variants.values()))
        u = load_bf16(os.path.join(a.dump, first["input_file"]), key).to(device)
        out = {"batch": key[0], "rows": key[1], "cols": key[2]}
        with torch.no_grad():
            ev, wall = time_calls(lambda: newton_schulz(u, steps, norm_scale, eps), device,
                                  a.warmup, a.reps)
            out["torch_ms"], out["torch_wall_ms"] = 1e3 * ev, 1e3 * wall
            torch_bf16 = newton_schulz(u, steps, norm_scale, eps)
            ref = newton_schulz(u.double(), steps, norm_scale, eps)
            out["torch_bf16_rel_err"], out["torch_bf16_rel_err_max_matrix"] = \
                rel_err(torch_bf16, ref)
            del torch_bf16
            for variant, row in sorted(variants.items()):
                mine = load_bf16(os.path.join(a.dump, row["output_file"]), key).to(device)
                out[f"ours_{variant}_ms"] = row["ms"]
                out[f"ratio_{variant}"] = row["ms"] / out["torch_ms"]
                # Ours is timed as torch_wall_ms is: the host clock around a synchronized call.
                out[f"ratio_{variant}_wall"] = row["ms"] / out["torch_wall_ms"]
                out[f"ours_{variant}_rel_err"], out[f"ours_{variant}_rel_err_max_matrix"] = \
                    rel_err(mine, ref)
                del mine
            del ref, u
        if device.type == "cuda":
            torch.cuda.empty_cache()
        result["shapes"].append(out)
        print(f"ns_torch: {key[0]}x{key[1]}x{key[2]}: torch {out['torch_ms']:.3f} ms, "
              + ", ".join(f"ours {v} {out[f'ours_{v}_ms']:.3f} ms (x{out[f'ratio_{v}']:.2f}, "
                          f"err {100 * out[f'ours_{v}_rel_err']:.2f}%)" for v in sorted(variants))
              + f", torch bf16 err {100 * out['torch_bf16_rel_err']:.2f}%", file=sys.stderr)
    text = json.dumps(result, indent=1) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
