#!/usr/bin/python3
"""Renders every plot of `muonplan report` for some models, with and without a workload, and
lists each text whose bounding box leaves the figure or overlaps another text (matplotlib
extents, issue 36 item 8). A diagnostic for now: it exits 1 while problems remain.

Usage: reports/check_plot_text.py MUONPLAN_BIN [MODEL ...]   (default: tiny-moe qwen3-30b-a3b
kimi-k2; about 25 s on 2 cores)
"""
import collections
import itertools
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402
from matplotlib.text import Text  # noqa: E402

WORKLOADS = [[], ["--tokens-per-step", "262144", "--seq-len", "4096"]]


def text_problems(fig, name):
    """(plot, kind, text[, other]) for each text outside the figure or overlapping another."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = {id(t): t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()}
    boxes = [(t.get_text()[:40], t.get_window_extent(renderer)) for t in texts.values()]
    w, h = fig.bbox.width, fig.bbox.height
    out = [(name, "outside", s) for s, b in boxes
           if b.x0 < -1 or b.y0 < -1 or b.x1 > w + 1 or b.y1 > h + 1]
    out += [(name, "overlap", a, b) for (a, ba), (b, bb) in itertools.combinations(boxes, 2)
            if ba.width > 0 and bb.width > 0 and ba.overlaps(bb)]
    return out


def main(argv):
    binary, models = argv[1], argv[2:] or ["tiny-moe", "qwen3-30b-a3b", "kimi-k2"]
    problems = []
    save = report.save
    report.save = lambda fig, path: (problems.extend(text_problems(fig, os.path.basename(path))),
                                     save(fig, path))
    for model, workload in itertools.product(models, WORKLOADS):
        with tempfile.TemporaryDirectory() as d:
            subprocess.run([binary, "report", "--model", model, "--nodes", "1..4", "--out", d,
                            *workload], check=True, capture_output=True)
            report.main(["report.py", os.path.join(d, "report-data.json"), d])
    for (plot, kind), n in sorted(collections.Counter(p[:2] for p in problems).items()):
        print(f"{plot}: {n} {kind}")
    for p in sorted(set(problems)):
        print("  " + " | ".join(p))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
