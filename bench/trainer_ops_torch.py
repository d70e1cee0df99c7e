#!/usr/bin/env python3
"""The trainer's operations behind the step-time model's constants, timed with PyTorch on this
GPU (bench/gpu_check.sh, stage `trainer_ops`; docs/executor.md, "GPU check").

    trainer_ops_torch.py --inspect INSPECT.json [--heads 32 --kv-heads 8 --head-dim 128]
        [--tokens 16384] [--lora-tokens 16384,65536] [--seq 4096,16384] [--peak-tflops F]
        [--hbm-gbps B]
        [--device auto|cuda|cpu] [--warmup 2] [--reps 5] [--quick] [--out FILE]
    trainer_ops_torch.py --inspect INSPECT.json --list      (the operations and their FLOPs only)

INSPECT.json is `muonplan inspect --model M --json`: its shape_groups ([rows, cols] = [out, in]
of every matrix of a decoder layer) are the linears timed, so the shapes are the planner's own.
The head flags default to Qwen3-4B's (models/qwen3-4b.yaml; tests/cli/bench_trainer_ops.sh
checks that they agree). What each part measures, and the constant of the planner it checks
(docs/planner.md section 8, topologies/*.yaml):

  token_loop  prime-rl's get_response_lengths loop shape (bench/host_token_loop.py's `loop`)
              over position ids held on the device, as the RL trainer ran it from January to
              June 2026 (#2723): us per token, against the planner's host_token_loop per token,
              python_iteration_ns + 2 x eager_op_us + host_sync_us.
  sync        bool() of a 0-d device tensor compared with 0: one eager op, the device-to-host
              copy and the synchronize (eager_op_us + host_sync_us).
  gemm        each linear's three bf16 GEMMs at --tokens rows (forward [T,in]x[in,out], input
              grad [T,out]x[out,in], weight grad [out,T]x[T,in]): TFLOP/s and the fraction of
              --peak-tflops. That fraction bounds calibration.training_gemm_efficiency from
              above: the trainer's GEMMs are these cuBLAS calls.
  lora        prime-rl's MultiLoRALinear computation per linear (4 adapter slots of rank 16, every
              token in slot 0): torch._grouped_mm where prime-rl uses it (compute capability
              9.x, widths a multiple of 8), else its per-slot loop; forward and forward +
              backward, beside the frozen base linear alone, so `extra_ms` is what the wrapper's
              GEMMs, stack and full-width add cost per call (adapter_gemm + lora_wrapper), at
              each row count of --lora-tokens. `lora_layer` sums a decoder layer's linears as
              full AC runs them (forward and backward, and the recompute's forward again) at
              each count, and the line through the first and last count splits it into a fixed
              part and a part per token: the planner's LoRA terms per layer and micro step are
              (adapter_gemm + lora_wrapper) / (layers x micro steps) of `plan --explain`.
  attention   causal scaled_dot_product_attention in bf16 (the SDPA kernel prime-rl's
              attn = "sdpa" runs), one sequence per length of --seq: TFLOP/s forward and
              backward with the planner's FLOPs (forward 2 S^2 H d, backward 2.5 times that),
              against attention_rate's published SDPA/FA2 rates.

Each time is the median of --reps after --warmup (ns_torch.py's time_calls: CUDA events on a
GPU, perf_counter on the CPU). --quick shrinks every size (a CPU rehearsal). Writes one JSON (stdout, or --out), schema
muonplan.trainer_ops/1.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from host_token_loop import loop as response_lengths_loop  # noqa: E402

SCHEMA = "muonplan.trainer_ops/1"
# prime-rl's benchmark: `--model.lora.rank 16 --max-concurrent-runs 4` (prime-rl-benchmarks.yaml).
LORA_RANK, LORA_SLOTS = 16, 4
# The planner's attention FLOPs (roofline.cc layer_passes, kAttnBackwardFlops).
ATTN_BACKWARD_FLOPS = 2.5


def linears(inspect):
    """(out, in) of each distinct matrix of a decoder layer, from muonplan inspect --json."""
    groups = inspect.get("shape_groups")
    if not isinstance(groups, list) or not groups:
        raise ValueError("no shape_groups: pass `muonplan inspect --model M --json`")
    return [(int(g["rows"]), int(g["cols"])) for g in groups]


def per_layer(inspect):
    """How many of each distinct matrix a decoder layer has (k and v, gate and up: 2), and the
    layers: each group's count over the fewest, which is one a layer (the groups are the layers'
    matrices)."""
    counts = [int(g["count"]) for g in inspect["shape_groups"]]
    fewest = min(counts)
    if fewest <= 0 or any(c % fewest for c in counts):
        raise ValueError("shape_groups' counts are not whole multiples of one a layer")
    return [c // fewest for c in counts], fewest


def gemm_ops(shapes, tokens):
    ops = []
    for out, inp in shapes:
        for what, m, n, k in (("forward", tokens, out, inp), ("input_grad", tokens, inp, out),
                              ("weight_grad", out, inp, tokens)):
            ops.append({"linear": [out, inp], "what": what, "m": m, "n": n, "k": k,
                        "flops": 2 * m * n * k})
    return ops


def attention_flops(seq, heads, head_dim):
    forward = 2 * seq * seq * heads * head_dim  # causal: half of 4 S^2 H d
    return forward, ATTN_BACKWARD_FLOPS * forward


class Timer:
    """ns_torch.py's time_calls (median of reps after warmup, CUDA events on a GPU), in ms."""

    def __init__(self, torch, device, warmup, reps):
        from ns_torch import time_calls  # imports torch and numpy: not for --list
        self.time_calls, self.device = time_calls, torch.device(device)
        self.warmup, self.reps = warmup, reps

    def ms(self, fn):
        return self.time_calls(fn, self.device, self.warmup, self.reps)[0] * 1e3


def measure_token_loop(torch, device, tokens):
    ids = torch.cat([torch.arange(tokens // 2), torch.arange(tokens // 2)]).to(device)
    response_lengths_loop(ids[:64])  # warm the indexing path
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    response_lengths_loop(ids)
    dt = time.perf_counter() - t0
    return {"tokens": tokens, "us_per_token": dt / (tokens - 1) * 1e6}


def measure_sync(torch, device, calls):
    t = torch.zeros((), device=device)
    for _ in range(10):
        bool(t == 0)
    t0 = time.perf_counter()
    for _ in range(calls):
        bool(t == 0)
    return {"calls": calls, "us_per_call": (time.perf_counter() - t0) / calls * 1e6}


def measure_gemms(torch, timer, device, dtype, ops, peak_tflops):
    rows = []
    for op in ops:
        a = torch.randn(op["m"], op["k"], device=device, dtype=dtype)
        b = torch.randn(op["k"], op["n"], device=device, dtype=dtype)
        ms = timer.ms(lambda: torch.mm(a, b))
        row = dict(op, ms=ms, tflops=op["flops"] / (ms * 1e-3) / 1e12)
        if peak_tflops:
            row["fraction_of_peak"] = row["tflops"] / peak_tflops
        rows.append(row)
        del a, b
    return rows


def lora_forward(torch, x, base_w, slots_a, slots_b, offsets, grouped, scaling):
    """MultiLoRALinear's computation (lora/multi_linear.py): base, stacked slots, grouped GEMMs
    or the per-slot loop, full-width add."""
    base = x @ base_w.t()
    a = torch.stack(list(slots_a))  # [slots, r, in]
    b = torch.stack(list(slots_b))  # [slots, out, r]
    if grouped:
        low = torch._grouped_mm(x, a.transpose(-2, -1), offsets)
        lora = torch._grouped_mm(low, b.transpose(-2, -1), offsets)
    else:
        parts, begin = [], 0
        for i in range(offsets.shape[0]):
            end = int(offsets[i])
            parts.append((x[begin:end] @ a[i].t()) @ b[i].t())
            begin = end
        lora = torch.cat(parts)
    return base + scaling * lora


def measure_lora(torch, timer, device, dtype, shapes, tokens, capability):
    rows = []
    for out, inp in shapes:
        grouped = (hasattr(torch, "_grouped_mm") and capability[0] == 9 and LORA_RANK % 8 == 0
                   and inp % 8 == 0 and out % 8 == 0)
        x = torch.randn(tokens, inp, device=device, dtype=dtype, requires_grad=True)
        w = torch.randn(out, inp, device=device, dtype=dtype) * inp ** -0.5
        slots_a = [torch.randn(LORA_RANK, inp, device=device, dtype=dtype, requires_grad=True)
                   for _ in range(LORA_SLOTS)]
        slots_b = [torch.zeros(out, LORA_RANK, device=device, dtype=dtype, requires_grad=True)
                   for _ in range(LORA_SLOTS)]
        # Cumulative token counts per slot, every token in slot 0 (the planner's assumption).
        offsets = torch.full((LORA_SLOTS,), tokens, device=device, dtype=torch.int32)
        grad = torch.randn(tokens, out, device=device, dtype=dtype)

        def base_fwd():
            return x @ w.t()

        def lora_fwd():
            return lora_forward(torch, x, w, slots_a, slots_b, offsets, grouped, 2.0)

        row = {"linear": [out, inp], "tokens": tokens, "rank": LORA_RANK, "slots": LORA_SLOTS,
               "path": "grouped_mm" if grouped else "loop"}
        with torch.no_grad():
            row["base_forward_ms"] = timer.ms(base_fwd)
            row["lora_forward_ms"] = timer.ms(lora_fwd)
        row["base_forward_backward_ms"] = timer.ms(lambda: base_fwd().backward(grad))
        row["lora_forward_backward_ms"] = timer.ms(lambda: lora_fwd().backward(grad))
        row["extra_forward_ms"] = row["lora_forward_ms"] - row["base_forward_ms"]
        row["extra_ms"] = row["lora_forward_backward_ms"] - row["base_forward_backward_ms"]
        rows.append(row)
        del x, w, slots_a, slots_b, grad
    return rows


def lora_layer(rows, token_counts, multiplicity):
    """A decoder layer's LoRA extra under full AC, per row count: forward + backward and the
    recompute's forward of every linear, each distinct shape as many times as a layer has it;
    then the line through the first and last count."""
    per = []
    for t in token_counts:
        mine = [r for r in rows if r["tokens"] == t]
        per.append({"tokens": t, "linears": sum(multiplicity),
                    "extra_ms": sum(m * (r["extra_ms"] + r["extra_forward_ms"])
                                    for m, r in zip(multiplicity, mine))})
    out = {"by_tokens": per}
    if len(per) > 1 and per[-1]["tokens"] != per[0]["tokens"]:
        slope = (per[-1]["extra_ms"] - per[0]["extra_ms"]) / (per[-1]["tokens"] - per[0]["tokens"])
        out["us_per_token"] = slope * 1e3
        out["fixed_ms"] = per[0]["extra_ms"] - slope * per[0]["tokens"]
    return out


def measure_attention(torch, timer, device, dtype, seqs, heads, kv_heads, head_dim, peak_tflops):
    import torch.nn.functional as F
    sdpa = getattr(F, "scaled_dot_product_attention", None)
    rows = []
    for seq in seqs:
        q = torch.randn(1, heads, seq, head_dim, device=device, dtype=dtype, requires_grad=True)
        kv_shape = (1, kv_heads, seq, head_dim)
        k = torch.randn(kv_shape, device=device, dtype=dtype, requires_grad=True)
        v = torch.randn(kv_shape, device=device, dtype=dtype, requires_grad=True)
        groups = heads // kv_heads

        def fwd():
            kk = k.repeat_interleave(groups, dim=1)
            vv = v.repeat_interleave(groups, dim=1)
            if sdpa is not None:
                return sdpa(q, kk, vv, is_causal=True)
            # torch < 2.0 has no SDPA: the same causal attention, materialized.
            s = (q @ kk.transpose(-2, -1)) * head_dim ** -0.5
            mask = torch.ones(seq, seq, device=device, dtype=torch.bool).triu(1)
            return s.masked_fill(mask, float("-inf")).softmax(-1) @ vv

        out_grad = torch.randn(1, heads, seq, head_dim, device=device, dtype=dtype)
        with torch.no_grad():
            f_ms = timer.ms(fwd)
        fb_ms = timer.ms(lambda: fwd().backward(out_grad))
        f_flops, b_flops = attention_flops(seq, heads, head_dim)
        b_ms = max(fb_ms - f_ms, 1e-9)
        row = {"seq": seq, "heads": heads, "kv_heads": kv_heads, "head_dim": head_dim,
               "kernel": "sdpa" if sdpa is not None else "materialized",
               "forward_ms": f_ms, "forward_backward_ms": fb_ms,
               "forward_tflops": f_flops / (f_ms * 1e-3) / 1e12,
               "backward_tflops": b_flops / (b_ms * 1e-3) / 1e12}
        if peak_tflops:
            row["forward_fraction_of_peak"] = row["forward_tflops"] / peak_tflops
            row["backward_fraction_of_peak"] = row["backward_tflops"] / peak_tflops
        rows.append(row)
        del q, k, v, out_grad
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inspect", required=True, help="muonplan inspect --model M --json output")
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--tokens", type=int, default=16384, help="GEMM rows")
    ap.add_argument("--lora-tokens", default="16384,65536",
                    help="LoRA rows, comma-separated (two or more: the per-token line)")
    ap.add_argument("--seq", default="4096,16384", help="attention lengths, comma-separated")
    ap.add_argument("--peak-tflops", type=float, default=0, help="the GPU's dense bf16 peak")
    ap.add_argument("--hbm-gbps", type=float, default=0, help="recorded beside the results")
    ap.add_argument("--device", default="auto", choices=["auto", "cuda", "cpu"])
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="small sizes (a CPU rehearsal)")
    ap.add_argument("--list", action="store_true", help="the operations and FLOPs, no torch")
    ap.add_argument("--out", help="write the JSON here (default: stdout)")
    args = ap.parse_args()

    try:
        with open(args.inspect) as f:
            inspect = json.load(f)
        shapes = linears(inspect)
        multiplicity, layers = per_layer(inspect)
        seqs = [int(s) for s in args.seq.split(",") if s]
        lora_tokens = [int(t) for t in args.lora_tokens.split(",") if t]
        if not lora_tokens or min(lora_tokens) <= 0:
            raise ValueError("--lora-tokens: positive row counts, comma-separated")
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"trainer_ops_torch.py: {args.inspect}: {e}")
    if args.heads <= 0 or args.kv_heads <= 0 or args.heads % args.kv_heads:
        sys.exit("trainer_ops_torch.py: --heads must be a positive multiple of --kv-heads")
    tokens = 256 if args.quick else args.tokens
    if args.quick:
        seqs, lora_tokens = [128], [256, 512]
    result = {"schema": SCHEMA, "linears": [list(s) for s in shapes],
              "per_layer": multiplicity,
              "layers": layers, "tokens": tokens,
              "peak_tflops": args.peak_tflops, "hbm_gbps": args.hbm_gbps,
              "gemm_ops": gemm_ops(shapes, tokens),
              "attention_flops": [dict(zip(("seq", "forward", "backward"),
                                           (s,) + attention_flops(s, args.heads, args.head_dim)))
                                  for s in seqs]}
    if not args.list:
        import torch
        device = args.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype = torch.bfloat16
        capability = torch.cuda.get_device_capability() if device == "cuda" else (0, 0)
        timer = Timer(torch, device, args.warmup, args.reps)
        result.update({
            "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
            "capability": list(capability), "torch": torch.__version__,
            "token_loop": measure_token_loop(torch, device, 512 if args.quick else 4096),
            "sync": measure_sync(torch, device, 100 if args.quick else 2000),
            "gemm": measure_gemms(torch, timer, device, dtype, result.pop("gemm_ops"),
                                  args.peak_tflops),
            "lora": [r for t in lora_tokens
                     for r in measure_lora(torch, timer, device, dtype, shapes, t, capability)],
            "attention": measure_attention(torch, timer, device, dtype, seqs, args.heads,
                                           args.kv_heads, args.head_dim, args.peak_tflops),
        })
    if "lora" in result:
        result["lora_layer"] = lora_layer(result["lora"], lora_tokens, multiplicity)
    text = json.dumps(result, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
