#!/usr/bin/python3
"""Renders every plot of `muonplan report` for some models, with and without a workload, and
lists each text whose bounding box leaves the figure or overlaps another text (matplotlib
extents after a draw, issue 36 item 8). ctest runs it as python.test_report_plots; exit 1 while
problems remain.

Usage: reports/check_plot_text.py MUONPLAN_BIN [MODEL ...]   (default: glm-4.5-air
qwen3-30b-a3b deepseek-v3)
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
from matplotlib.transforms import Bbox  # noqa: E402

MODELS = ["glm-4.5-air", "qwen3-30b-a3b", "deepseek-v3"]
# 1..4: node count 3 is a gap under the workload (64 sequences do not split over 3 groups).
NODES = "1..4"
WORKLOADS = [[], ["--tokens-per-step", "262144", "--seq-len", "4096"]]


def drawn_tick_labels(axis):
    """The tick labels `axis` draws: matplotlib keeps label texts for ticks outside the view
    interval (a log axis's 10^0 below the data) and skips them when drawing, so they are no
    text of the picture. The same test as Axis._update_ticks, in the scale's coordinates (log10
    of a log axis), with its relative tolerance."""
    scaled = axis.get_transform().transform  # the scale alone (log), not to pixels
    low, high = sorted(scaled(sorted(axis.get_view_interval())))
    slack = 1e-10 * (high - low)
    out = []
    for tick in axis.get_major_ticks() + axis.get_minor_ticks():
        at = scaled([tick.get_loc()])[0]
        if low - slack <= at <= high + slack:
            out += [t for t in (tick.label1, tick.label2) if t.get_visible()]
    return out


def figure_texts(fig):
    """Every visible, non-empty text the figure draws, tick labels only for drawn ticks."""
    ticks = {id(t) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
             for tick in axis.get_major_ticks() + axis.get_minor_ticks()
             for t in (tick.label1, tick.label2)}
    texts = {id(t): t for t in fig.findobj(Text) if id(t) not in ticks}
    texts.update({id(t): t for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
                  for t in drawn_tick_labels(axis)})
    return [t for t in texts.values() if t.get_visible() and t.get_text().strip()]


def text_problems(fig, name):
    """(plot, kind, text[, other]) for each text outside the figure or overlapping another."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    # Text's own extent: an Annotation's would add its arrow, a line and no text.
    boxes = [(t.get_text()[:40], Text.get_window_extent(t, renderer)) for t in figure_texts(fig)]
    page = Bbox.from_bounds(0, 0, fig.bbox.width, fig.bbox.height).expanded(1.0, 1.0)
    out = [(name, "outside", s) for s, b in boxes
           if not (page.x0 - 1 <= b.x0 and b.x1 <= page.x1 + 1 and page.y0 - 1 <= b.y0
                   and b.y1 <= page.y1 + 1)]
    # Boxes that share only an edge (a pixel of rounding) do not overlap.
    out += [(name, "overlap", a, b) for (a, ba), (b, bb) in itertools.combinations(boxes, 2)
            if ba.width > 0 and bb.width > 0 and ba.shrunk(0.98, 0.9).overlaps(bb.shrunk(0.98, 0.9))]
    return out


def check(binary, models=MODELS, workloads=WORKLOADS, nodes=NODES):
    """(problems, texts) of every plot of the reports of `models` x `workloads` over `nodes`:
    each problem tagged with its model and workload; texts[(tag, plot)] the texts the plot
    draws."""
    problems, texts = [], {}
    save = report.save

    def checked_save(fig, path, tag):
        name = os.path.basename(path)
        problems.extend((tag,) + p for p in text_problems(fig, name))
        texts[(tag, name)] = [t.get_text() for t in figure_texts(fig)]
        save(fig, path)

    try:
        for model, workload in itertools.product(models, workloads):
            tag = model + ("" if not workload else " +workload"
                           if "--tokens-per-step" in workload else " +" + workload[0].lstrip("-"))
            report.save = lambda fig, path, tag=tag: checked_save(fig, path, tag)
            with tempfile.TemporaryDirectory() as d:
                subprocess.run([binary, "report", "--model", model, "--nodes", nodes, "--out", d,
                                *workload], check=True, capture_output=True)
                report.main(["report.py", os.path.join(d, "report-data.json"), d])
    finally:
        report.save = save
    return problems, texts


def main(argv):
    problems, _ = check(argv[1], argv[2:] or MODELS)
    for (tag, plot, kind), n in sorted(collections.Counter(p[:3] for p in problems).items()):
        print(f"{tag} {plot}: {n} {kind}")
    for p in sorted(set(problems)):
        print("  " + " | ".join(p))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
