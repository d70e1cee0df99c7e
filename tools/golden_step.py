#!/usr/bin/python3
"""Writes the frozen golden steps (tests/data/golden/muon_adamw_steps.json), run by hand.

An independent implementation of the optimizer step in numpy, as llm.c keeps a reference
(issue 37 item 6): the executor's deterministic initial parameters and gradients
(executor/src/step/init.cc: fnv1a-64 of the name, splitmix64 streams), Muon (momentum,
Nesterov, bf16 momentum, Newton-Schulz in bf16 with the plan's coefficients, the update scaled
by lr * update_rms * sqrt(max(rows, cols)), decoupled weight decay) and AdamW with bias
correction, from docs/muon-step.md. It shares no code with the executor: not
optimizer_formulas.h, not the reference step. What it takes from muonplan is the plan file
(tensor names, shapes, partitions, rules and hyperparameters), which is input data.

The test (tests/python/test_golden_step.py) plans each case the same way, runs `muonplan
execute --steps K --checkpoint`, and compares the checkpoint with these figures within the
tolerances written beside them.

    tools/golden_step.py [--muonplan build/cli/muonplan] [--out tests/data/golden/muon_adamw_steps.json]
"""

import argparse
import json
import os
import subprocess
import tempfile

import numpy as np

M64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15
HEAD = 256  # elements of each tensor kept in the file

# (name, `muonplan plan` flags, steps): a plain Muon run and one with Nesterov and bf16 momentum.
CASES = [
    ("muon-adamw", ["--optimizer", "muon"], 3),
    ("nesterov-bf16-momentum", ["--optimizer", "muon", "--nesterov", "--bf16-momentum",
                                "--weight-decay", "0.1", "--adamw-weight-decay", "0.05"], 3),
]
PLAN_FLAGS = ["--model", "tests/data/micro-dense.yaml", "--topology", "topologies/cpu-ci.yaml",
              "--nodes", "1", "--gpus-per-node", "1", "--offload", "none"]


def fnv1a64(text):
    h = 14695981039346656037
    for b in text.encode():
        h = ((h ^ b) * 1099511628211) & M64
    return h


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def mix64_np(z):
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def uniform(name, stream, count, half_width, center):
    key = mix64(fnv1a64(name) ^ mix64(stream))
    with np.errstate(over="ignore"):
        k = np.arange(1, count + 1, dtype=np.uint64)
        x = mix64_np(np.uint64(key) + k * np.uint64(GAMMA))
    u = ((x >> np.uint64(40)).astype(np.float64) + 0.5) * 2.0 ** -24
    return (center + half_width * (2.0 * u - 1.0)).astype(np.float32)


def init_param(name, n):
    return uniform(name, 1, n, 0.02 * np.sqrt(3.0), 1.0 if "norm" in name else 0.0)


def grad(name, step, n):
    return uniform(name, 2 + step, n, 1e-3 * np.sqrt(3.0), 0.0)


def bf16(x):
    """Round float32 to bfloat16 (nearest even), returned as float32."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32)
    r = ((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16))
    return (r << np.uint32(16)).astype(np.uint32).view(np.float32)


def gemm(a, b, alpha, c, beta):
    """bf16(alpha * a @ b + beta * c): float32 products and sums, one rounding to bf16."""
    out = np.float32(alpha) * (a.astype(np.float32) @ b.astype(np.float32))
    if beta != 0:
        out = out + np.float32(beta) * c
    return bf16(out)


def newton_schulz(u, coefficients, norm_scale):
    tall = u.shape[0] > u.shape[1]
    x = u.T.copy() if tall else u.copy()
    norm = np.sqrt(np.sum(x.astype(np.float64) ** 2))
    k = np.float32(1.0 / (norm_scale * norm + 1e-8))
    x = bf16(x * k)
    for a, b, c in coefficients:
        A = gemm(x, x.T, 1.0, None, 0)
        B = gemm(A, A, c, A, b)
        x = gemm(B, x, 1.0, x, a)
    return x.T if tall else x


def matrices(t):
    """(slice of the flat tensor, rows, cols) of each matrix Muon orthogonalizes."""
    shape = t["shape"]
    rows, cols = shape[-2], shape[-1]
    count = shape[0] if t["stack_dim"] == 0 else 1
    parts = [p["rows"] for p in t["partitions"]] or [rows]
    out = []
    for e in range(count):
        row = 0
        for r in parts:
            start = (e * rows + row) * cols
            out.append((slice(start, start + r * cols), r, cols))
            row += r
    return out


def muon(t, w, m, g, o):
    mu = np.float32(o["momentum"])
    nesterov, bf16_m = o["nesterov"], o["bf16_momentum"]
    decay = np.float32(1.0 - o["lr"] * o["weight_decay"])
    for sl, rows, cols in matrices(t):
        gi = g[sl]
        if bf16_m:
            gb = bf16(gi)
            m[sl] = bf16(mu * m[sl] + gb)
            u = bf16(mu * m[sl] + gb) if nesterov else m[sl].copy()
        else:
            m[sl] = mu * m[sl] + gi
            u = bf16(mu * m[sl] + gi if nesterov else m[sl])
        x = newton_schulz(u.reshape(rows, cols), o["newton_schulz_coefficients"],
                          o["ns_norm_scale"])
        s = np.float32(o["lr"] * o["update_rms"] * np.sqrt(float(max(rows, cols))))
        w[sl] = w[sl] * decay - s * x.reshape(-1)


def adamw(w, m, v, g, a, step):
    b1, b2 = np.float32(a["beta1"]), np.float32(a["beta2"])
    lr, eps = np.float32(a["lr"]), np.float32(a["eps"])
    decay = np.float32(1) - lr * np.float32(a["weight_decay"])
    step_size = np.float32(float(lr) / (1.0 - float(b1) ** step))
    sqrt_bc2 = np.float32(np.sqrt(1.0 - float(b2) ** step))
    m[:] = b1 * m + (np.float32(1) - b1) * g
    v[:] = b2 * v + (np.float32(1) - b2) * g * g
    w[:] = w * decay - step_size * (m / (np.sqrt(v) / sqrt_bc2 + eps))


def run_case(plan, steps):
    o = plan["optimizer_config"]
    state = {}
    for t in plan["tensors"]:
        n = int(np.prod(t["shape"]))
        state[t["name"]] = (init_param(t["name"], n), np.zeros(n, np.float32),
                            np.zeros(n, np.float32))
    for step in range(1, steps + 1):
        for t in plan["tensors"]:
            w, m, v = state[t["name"]]
            g = grad(t["name"], step, w.size)
            if t["rule"] == "muon":
                muon(t, w, m, g, o)
            else:
                adamw(w, m, v, g, o["adamw"], step)
    out = {}
    for t in plan["tensors"]:
        w, m, v = state[t["name"]]
        w0 = init_param(t["name"], w.size)
        entry = {"rule": t["rule"], "param": w[:HEAD].tolist(), "momentum": m[:HEAD].tolist(),
                 "update_l2": float(np.linalg.norm((w - w0).astype(np.float64)))}
        if t["rule"] == "adamw":
            entry["variance"] = v[:HEAD].tolist()
        out[t["name"]] = entry
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--muonplan", default="build/cli/muonplan")
    p.add_argument("--out", default="tests/data/golden/muon_adamw_steps.json")
    args = p.parse_args()
    cases = []
    with tempfile.TemporaryDirectory() as work:
        for name, flags, steps in CASES:
            path = os.path.join(work, name + ".json")
            subprocess.run([args.muonplan, "plan", *PLAN_FLAGS, *flags, "--out", path],
                           check=True, stdout=subprocess.DEVNULL)
            with open(path) as f:
                plan = json.load(f)
            cases.append({"name": name, "plan_flags": PLAN_FLAGS + flags, "steps": steps,
                          "tensors": run_case(plan, steps)})
    golden = {
        "written_by": "tools/golden_step.py (numpy " + np.__version__ + ")",
        "tolerances": {
            "adamw": "param, momentum, variance: relative 1e-5 (the same fp32 operations; the "
                     "order of numpy's sums may differ in the last bit)",
            "muon_param": "|param - golden| <= 0.05 x the golden update's RMS per element "
                          "(Newton-Schulz in bf16: the GEMMs' fp32 summation order differs)",
            "muon_update_l2": "relative 1% (docs/muon-step.md section 7: two bf16 NS agree "
                              "to about 0.5%)",
            "momentum": "fp32 momentum: relative 1e-6; bf16 momentum: one bf16 ulp",
        },
        "cases": cases,
    }
    with open(args.out, "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
