#!/usr/bin/env python3
"""Our CPU backend beside PyTorch's CPU path, in one run, interleaved (docs/executor.md, "Beside
PyTorch").

    cpu_vs_torch.py [--bin build/cli/muonplan] [--shapes B,R,C;...] [--reps 5] [--rounds 3]
                    [--elems N] [--threads N] [--json]

Rows:
  ns_BxRxC   one batched Newton-Schulz call (quintic): ours is `muonplan bench ns --backend cpu`
             (median of --reps calls), theirs PyTorch's bf16 NS as bench/ns_torch.py writes it
             (baddbmm, oneDNN underneath), median of --reps calls after one warm-up.
  host passes on --elems elements: ours from `muonplan bench cpu-kernels` (best of --reps),
             theirs the PyTorch ops a trainer would run (best of --reps):
               fold_momentum_f32   m.mul_(mu).add_(g)              (fp32 m)
               fold_momentum_bf16  m.mul_(mu).add_(g)              (bf16 m, fp32 g)
               add_update_bf16     w.mul_(decay).add_(u)           (fp32 w, bf16 u)
               adamw               torch.optim.AdamW(foreach=True).step() on one fp32 tensor
               cast_to_bf16        y.copy_(x)                      (bf16 y, fp32 x)
               triad               torch.add(b, c, alpha=q, out=a)
Each round runs ours, then theirs, for every row; the figure kept is the best round's.
`speed` is ours / theirs as speeds (their time over ours): 1.0 or more means ours is as fast.

Needs torch (Debian: apt-get install python3-torch; scripts/setup.sh does not install it):
without it the script prints one line and exits 77 (skipped). Benchmarks report; nothing here
passes or fails on time.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

torch = None  # imported in main(), after the arguments are checked (it takes seconds)

HOST_KERNELS = ["triad", "fold_momentum_f32", "fold_momentum_bf16", "add_update_bf16", "adamw",
                "cast_to_bf16"]


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def ours_json(binary, args):
    out = subprocess.run([binary, "bench", *args, "--json"], check=True, capture_output=True,
                         text=True)
    return json.loads(out.stdout)


def ours_ns(binary, shape, reps):
    b, r, c = shape
    out = ours_json(binary, ["ns", "--backend", "cpu", "--shapes", f"{b},{r},{c}", "--reps",
                             str(reps), "--sgemm-size", "64"])
    return out["shapes"][0]["ms"] / 1e3, out


def torch_ns(shape, steps, norm_scale, eps, reps):
    x = torch.randn(*shape).to(torch.bfloat16)
    newton_schulz(x, steps, norm_scale, eps)  # warm-up
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        newton_schulz(x, steps, norm_scale, eps)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def torch_host_passes(n, reps):
    """Best seconds of each host pass, PyTorch's way."""
    g = torch.randn(n) * 1e-3
    m = torch.full((n,), 0.1)
    mb = m.to(torch.bfloat16)
    w = torch.ones(n)
    u = (torch.randn(n) * 1e-3).to(torch.bfloat16)
    a, b, c = torch.zeros(n), torch.randn(n), torch.randn(n)
    y = torch.empty(n, dtype=torch.bfloat16)
    p = torch.nn.Parameter(torch.ones(n))
    p.grad = g.clone()
    opt = torch.optim.AdamW([p], lr=1e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1,
                            foreach=True)
    passes = {
        "triad": lambda: torch.add(b, c, alpha=0.5, out=a),
        "fold_momentum_f32": lambda: m.mul_(0.9).add_(g),
        "fold_momentum_bf16": lambda: mb.mul_(0.9).add_(g),
        "add_update_bf16": lambda: w.mul_(0.999).add_(u),
        "adamw": opt.step,
        "cast_to_bf16": lambda: y.copy_(w),
    }
    best = {}
    for name, run in passes.items():
        run()  # warm-up (AdamW's state is allocated here)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            run()
            times.append(time.perf_counter() - t0)
        best[name] = min(times)
    return best


def parse_shapes(text):
    return [tuple(int(v) for v in s.split(",")) for s in text.split(";") if s]


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(root, "build", "cli", "muonplan"))
    ap.add_argument("--shapes", default="4,256,1024;2,1024,1024;1,2048,2048;1,4096,1024;1,1024,4096",
                    help="NS shapes BATCH,ROWS,COLS;... (default: the issue's, a tall, a wide)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--elems", type=int, default=1 << 24, help="elements per host-pass array")
    ap.add_argument("--threads", type=int, default=os.cpu_count(),
                    help="PyTorch's threads (ours: the executor's, all cores unless "
                         "OMP_NUM_THREADS is set); default: every core")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.reps < 1 or args.rounds < 1 or args.elems < 1 or args.threads < 1:
        print("cpu_vs_torch.py: --reps, --rounds, --elems and --threads must be positive",
              file=sys.stderr)
        return 2
    global torch, newton_schulz
    try:
        import torch
    except ImportError:
        print("cpu_vs_torch.py: skipped, no torch (apt-get install python3-torch)")
        return 77
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from ns_torch import newton_schulz  # the same NS as the GPU check's
    torch.set_num_threads(args.threads)  # torch may count fewer cores than the machine has

    shapes = parse_shapes(args.shapes)
    ns_ours = {s: float("inf") for s in shapes}
    ns_theirs = dict(ns_ours)
    host_ours = {k: float("inf") for k in HOST_KERNELS}
    host_theirs = dict(host_ours)
    meta = {}
    for _ in range(args.rounds):
        for s in shapes:
            sec, out = ours_ns(args.bin, s, args.reps)
            ns_ours[s] = min(ns_ours[s], sec)
            meta = {k: out.get(k) for k in ("gemm_path", "openblas_core", "threads")}
            steps = [tuple(c) for c in out["schedule_steps"]]
            ns_theirs[s] = min(ns_theirs[s],
                               torch_ns(s, steps, out["norm_scale"], out["eps"], args.reps))
        kernels = ours_json(args.bin, ["cpu-kernels", "--elems", str(args.elems), "--reps",
                                       str(args.reps)])
        meta["host_isa"] = kernels.get("isa")
        for k in kernels["kernels"]:
            bytes_moved = args.elems * k["bytes_per_elem"]
            host_ours[k["name"]] = min(host_ours[k["name"]], bytes_moved / (k["gbs_vector"] * 1e9))
        for name, sec in torch_host_passes(args.elems, args.reps).items():
            host_theirs[name] = min(host_theirs[name], sec)

    rows = []
    for s in shapes:
        rows.append({"row": "ns_%dx%dx%d" % s, "ours_ms": ns_ours[s] * 1e3,
                     "theirs_ms": ns_theirs[s] * 1e3, "speed": ns_theirs[s] / ns_ours[s]})
    for k in HOST_KERNELS:
        rows.append({"row": k, "ours_ms": host_ours[k] * 1e3, "theirs_ms": host_theirs[k] * 1e3,
                     "speed": host_theirs[k] / host_ours[k]})
    result = {"date": time.strftime("%Y-%m-%d", time.gmtime()), "cpu": cpu_name(),
              "cores": os.cpu_count(), "torch": torch.__version__,
              "torch_threads": torch.get_num_threads(), "ours": meta, "reps": args.reps,
              "rounds": args.rounds, "elems": args.elems, "rows": rows}
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{result['cpu']}, {result['cores']} cores; torch {result['torch']} on "
          f"{result['torch_threads']} threads; ours: GEMM path {meta.get('gemm_path')}, host "
          f"kernels {meta.get('host_isa')}, {meta.get('threads')} threads")
    print(f"best of {args.rounds} interleaved rounds; speed = ours / theirs (>= 1: ours as fast)")
    print("%-22s %12s %12s %8s" % ("row", "ours ms", "torch ms", "speed"))
    for r in rows:
        print("%-22s %12.3f %12.3f %8.2f" % (r["row"], r["ours_ms"], r["theirs_ms"], r["speed"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
