#!/usr/bin/env python3
"""The Python side of prime-rl's per-token host loop, measured on this CPU.

prime-rl's RL trainer (January 2026 to #2723, June 2026) computes each micro step's sample
lengths with trainer/utils.py get_response_lengths: `for i in range(1, len(position_ids)):
if position_ids[i] == 0 and ...`, over a CUDA tensor of every token of the micro step. Each
iteration is one Python loop step, one tensor index (aten::select), one comparison (an aten::eq
kernel on the GPU) and the `if`'s bool() of a CUDA tensor (a device-to-host copy and a stream
synchronize). This script measures only the first of these: the same loop shape over a Python
list of the same length and values (position ids 0..n-1 of one sample per row), so the `and`
short-circuits as it does on the fake data. The tensor ops and the sync are not measured here
(no torch, no GPU): the planner takes them from published figures (docs/planner.md section 8,
`host_token_loop`).

Usage: python3 bench/host_token_loop.py [TOKENS] [REPEATS]; prints ns per iteration (min over
repeats) as `python_iteration_ns N`.
"""
import sys
import time


def loop(position_ids):
    boundaries = [0]
    for i in range(1, len(position_ids)):
        if position_ids[i] == 0 and position_ids[i - 1] != 0:
            if i + 1 < len(position_ids) and position_ids[i + 1] == 1:
                boundaries.append(i)
    return boundaries


def main():
    tokens = int(sys.argv[1]) if len(sys.argv) > 1 else 65536
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    rows = 2
    ids = [p for _ in range(rows) for p in range(tokens // rows)]
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        loop(ids)
        best = min(best, time.perf_counter_ns() - t0)
    print(f"tokens {len(ids)} python_iteration_ns {best / (len(ids) - 1):.1f} "
          f"({sys.implementation.name} {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
