#!/usr/bin/python3
"""Draws docs/plan_scale.png from plan_bench's output: planning time and peak memory of the
Kimi-K2 plan (offload none) against the world size.

Usage: build/bench/plan_bench 1 | scripts/plan_scale_plot.py OUT.png
(Debian's /usr/bin/python3 with python3-matplotlib; reads the "plan_scale" lines of stdin.)
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: plan_bench 1 | plan_scale_plot.py OUT.png")
    rows = [json.loads(line) for line in sys.stdin if '"plan_scale"' in line]
    if not rows:
        sys.exit("plan_scale_plot.py: no plan_scale lines on stdin")
    ranks = [r["ranks"] for r in rows]
    fig, (t, m) = plt.subplots(1, 2, figsize=(11, 4))
    t.loglog(ranks, [r["user_s"] + r["sys_s"] for r in rows], "o-", label="CPU (user + sys)")
    t.loglog(ranks, [r["wall_s"] for r in rows], "s--", label="wall")
    t.axhline(3, color="gray", linestyle=":", label="bound at 131072 ranks: 3 s")
    t.set_ylabel("seconds per plan")
    m.loglog(ranks, [r["peak_rss_mib"] for r in rows], "o-", color="#2ca02c", label="peak RSS")
    m.axhline(1024, color="gray", linestyle=":", label="bound: 1 GiB")
    m.set_ylabel("MiB")
    for ax, title in ((t, "Planning time"), (m, "Peak memory")):
        ax.set_xlabel("world size, ranks (8 per node)")
        ax.set_title(f"{title}: Kimi-K2, offload none")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(argv[1], dpi=100)


if __name__ == "__main__":
    main(sys.argv)
