#!/usr/bin/python3
"""Capacity report: turns report-data.json (written by `muonplan report`) into report.md and
PNG plots. Every number drawn or printed is read from the JSON; this script models nothing.

Usage: report.py DATA_JSON OUT_DIR   (Debian's /usr/bin/python3 with python3-matplotlib)
"""
import contextlib
import json
import os
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

# report.md's text, and the helpers it shares with the plots (report.md_text: tests/cli).
from report_markdown import (MAX_LAYOUT_LINES, is_number, layout_form,  # noqa: E402,F401
                             layout_lines, markdown, md_text, measured_pairs, sweep_layouts,
                             variant_label)
# The memory breakdown's groups (report.coinciding, report.memory_groups: tests/python).
from report_memory import (MAX_MEMORY_GROUPS, coinciding, levels_line,  # noqa: E402,F401
                           memory_groups, same_gib, stacked_bar)

DPI = 110
VARIANT_COLORS = ["#1f77b4", "#17becf", "#d62728", "#2ca02c", "#9467bd", "#8c564b"]
VARIANT_MARKERS = ["o", "D", "s", "^", "v", "P"]
STRATEGY_COLORS = {"padded": "#7f7f7f", "restart": "#ff7f0e", "round-robin": "#9467bd",
                   "balanced": "#2ca02c"}
GB, TFLOP = 1e9, 1e12

plt.rcParams.update({"font.size": 10, "axes.titlesize": 11, "axes.labelsize": 10,
                     "legend.fontsize": 9, "axes.grid": True, "grid.alpha": 0.3})


class WriteError(Exception):
    """A file of the report could not be written (main prints one line and exits 1)."""


def write_atomic(path, write):
    """write(f) into a temporary beside path, then rename it into place: a failure (a full
    disk) leaves the previous file or none, never a truncated one, and raises WriteError."""
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.tmp.{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise WriteError(f"cannot write {path}: {e.strerror or e}") from None


def save(fig, path):
    write_atomic(path, lambda f: fig.savefig(f, dpi=DPI, format="png"))


def legend_below(fig, handles, bottom=0.0):
    """A figure legend under the panels, from `bottom` (a fraction of the height) up, in as many
    columns as its longest label allows (about 7 px a character at 9 pt and 110 dpi, 50 px of
    handle); returns the fraction of the height it takes, for tight_layout's rect."""
    fig_w_px, fig_h_px = fig.get_size_inches() * DPI
    widest = max(len(h.get_label()) for h in handles) * 7 + 50
    ncol = max(1, min(len(handles), 6, int(fig_w_px * 0.95 // widest)))
    rows = -(-len(handles) // ncol)
    fig.legend(handles=handles, loc="lower center", ncol=ncol, frameon=False,
               bbox_to_anchor=(0.5, bottom))
    return bottom + (rows * 19 + 12) / fig_h_px


def chosen_point(data):
    c = data["chosen"]
    return c["nodes"], c["offload"]


def scope(data):
    """What a plan without a workload covers, for every plot's title (issue 50 item 10): its
    GPU peak has no activations and its time no forward or backward."""
    return "" if data["inputs"].get("workload") is not None else ", optimizer step only"


# ---------------------------------------------------------------- plots 1 and 2: sweep lines
def same_value(a, b):
    """Two figures a plot cannot tell apart: within half a percent (less than a marker)."""
    return abs(a - b) <= 0.005 * max(abs(a), abs(b))


def sweep_series(data, key, mode, variant):
    """{node count: figure} of the evaluated points of one panel's line."""
    return {p["nodes"]: p["predicted"][key] for p in data["sweep"]
            if p["offload"] == mode and p["optimizer"] == variant and p["evaluated"]}


def coinciding_lines(data, key):
    """{variant: (earlier variant, modes)}: a line that lies on an earlier one in those panels
    (the same node counts, every figure the same_value), so the legend says so instead of one
    line hiding the other."""
    out = {}
    variants = data["optimizer_variants"]
    for i, v in enumerate(variants):
        for u in variants[:i]:
            modes = []
            for mode in data["offload_modes"]:
                a, b = sweep_series(data, key, mode, v), sweep_series(data, key, mode, u)
                if a and a.keys() == b.keys() and all(same_value(a[n], b[n]) for n in a):
                    modes.append(mode)
            if modes:
                out[v] = (u, modes)
                break
    return out


def line_label(data, key, variant, same):
    """The legend label of a variant's line, with the line it coincides with."""
    label = variant_label(variant)
    if variant not in same:
        return label
    other, modes = same[variant]
    where = "" if len(modes) == len(data["offload_modes"]) else \
        " at offload " + ", ".join(modes)
    return f"{label} (same as {variant_label(other)}{where})"


def sweep_gaps(data):
    """The node counts the sweep could not evaluate, with why: [(reason, [nodes], [modes])] in
    the order met. A count drawn as a gap in the sweep plots, never silently left out."""
    gaps = {}
    for p in data["sweep"]:
        if not p["evaluated"]:
            nodes, modes = gaps.setdefault(p.get("note") or "not evaluated", ([], []))
            if p["nodes"] not in nodes:
                nodes.append(p["nodes"])
            if p["offload"] not in modes:
                modes.append(p["offload"])
    return [(reason, nodes, modes) for reason, (nodes, modes) in gaps.items()]


# The footnote names at most this many reasons word for word; the other gaps' counts follow
# in one line (their reasons are in report.md's sweep table), so the figure keeps its size.
MAX_GAP_REASONS = 2


def gap_lines(gaps, width_chars=150):
    """The sweep plots' footnote: one wrapped line group per reason, the first MAX_GAP_REASONS
    reasons, then the node counts of the rest."""
    out = []
    for reason, nodes, modes in gaps[:MAX_GAP_REASONS]:
        counts = ", ".join(str(n) for n in nodes)
        out += textwrap.wrap(f"Gap at {counts} node(s), offload {', '.join(modes)}: not "
                             f"evaluated: {reason}", width_chars)
    rest = sorted({n for _, nodes, _ in gaps[MAX_GAP_REASONS:] for n in nodes})
    if rest:
        shown = ", ".join(str(n) for n in rest[:40]) + (", ..." if len(rest) > 40 else "")
        out += textwrap.wrap(f"Gaps also at {len(rest)} more node count(s): {shown} (each "
                             "one's reason: report.md, the sweep table)", width_chars)
    return out


def draw_sweep_panel(ax, data, key, mode, dodge, same):
    """One offload mode's lines, fits filled and misfits hollow, the chosen point marked."""
    variants = data["optimizer_variants"]
    nodes = data["inputs"]["node_counts"]
    chosen_nodes, chosen_offload = chosen_point(data)
    chosen_optimizer = ("muon-bf16-momentum" if data["chosen"]["optimizer_config"]["bf16_momentum"]
                        else data["chosen"]["optimizer"])
    for i, v in enumerate(variants):
        pts = [p for p in data["sweep"]
               if p["offload"] == mode and p["optimizer"] == v and p["evaluated"]]
        xs = [p["nodes"] + (i - (len(variants) - 1) / 2) * dodge for p in pts]
        ys = [p["predicted"][key] for p in pts]
        color, marker = VARIANT_COLORS[i % 6], VARIANT_MARKERS[i % 6]
        # A line on an earlier one is dashed, so the two stay visible (its legend says so).
        ls = "--" if mode in same.get(v, (None, []))[1] else "-"
        ax.plot(xs, ys, color=color, lw=1.6, alpha=0.9, ls=ls)
        if key == "gpu_peak_gib":  # reserved against allocated: the runtime's share
            alloc = [p["predicted"].get("gpu_allocated_gib") for p in pts]
            if all(a is not None for a in alloc):
                ax.plot(xs, alloc, color=color, lw=1.0, ls=":", alpha=0.9)
        # Two marker sets (fits: filled, misfits: hollow), not one artist per point: a
        # sweep of 500 node counts drew 6,000 artists and took half a minute.
        for fits in (True, False):
            sel = [(x, y) for x, y, p in zip(xs, ys, pts) if p["fits"] == fits]
            if sel:
                ax.plot([x for x, _ in sel], [y for _, y in sel], ls="", marker=marker,
                        ms=7 if len(nodes) <= 8 else 5, color=color,
                        markerfacecolor=color if fits else "white", markeredgewidth=1.5)
        for x, y, p in zip(xs, ys, pts):
            if (p["nodes"], mode, v) == (chosen_nodes, chosen_offload, chosen_optimizer):
                # Above the point and towards the panel's middle: below it the label met the
                # tick labels, right of the last count it left the panel.
                right = p["nodes"] - min(nodes) > 0.6 * (max(nodes) - min(nodes))
                ax.annotate("chosen", (x, y), xytext=(-60 if right else 14, 18),
                            textcoords="offset points",
                            arrowprops={"arrowstyle": "->"}, fontweight="bold",
                            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8,
                                  "pad": 1})
    gap_nodes = sorted({n for _, ns, modes in sweep_gaps(data) if mode in modes for n in ns})
    labelled = None  # a "gap" word per band while the words stay apart (8% of the axis)
    for n in gap_nodes:
        half = 0.3 * dodge * len(variants) + 0.05
        ax.axvspan(n - half, n + half, color="0.85", alpha=0.6, lw=0)
        if labelled is None or n - labelled >= 0.08 * (max(nodes) - min(nodes) + 1):
            ax.text(n, 0.03, "gap", transform=ax.get_xaxis_transform(), ha="center",
                    va="bottom", fontsize=8, color="0.3")
            labelled = n


def plot_sweep(data, key, limit, limit_label, ylabel, title, path):
    """One panel per offload mode, one line per optimizer variant: key vs node count; node
    counts the sweep could not evaluate are shaded gaps, their reasons under the legend."""
    modes, variants = data["offload_modes"], data["optimizer_variants"]
    nodes = data["inputs"]["node_counts"]
    common, others = sweep_layouts(data)
    shaded = sweep_gaps(data)
    gaps = gap_lines(shaded) + layout_lines(others)  # the lines under the legend
    fig, axes = plt.subplots(1, len(modes), figsize=(13, 5.6 + 0.15 * len(gaps)), sharey=True)
    dodge = 0.06 * (max(nodes) - min(nodes) + 1) / 4  # overlapping lines stay visible
    same = coinciding_lines(data, key)
    for ax, mode in zip(axes, modes):
        draw_sweep_panel(ax, data, key, mode, dodge, same)
        if limit is not None:
            ax.axhline(limit, color="black", ls="--", lw=1.3)
        ax.set_title(f"offload = {mode}")
        ax.set_xlabel("nodes")
        # Every count a tick while they stay legible; past 16, integer ticks Matplotlib picks.
        if len(nodes) <= 16:
            ax.set_xticks(nodes)
        else:
            ax.xaxis.set_major_locator(MaxNLocator(nbins=10, integer=True))
    values = [p["predicted"][key] for p in data["sweep"] if p["evaluated"]]
    bounds = [] if limit is None else [limit]
    top = max(bounds + values)
    bottom = min(bounds + [v for v in values if v > 0])
    if top / bottom > 60:  # a linear axis would flatten the small values against zero
        axes[0].set_yscale("log")
        axes[0].set_ylim(bottom / 1.5, top * 1.5)
        ylabel += " (log scale)"
    else:
        axes[0].set_ylim(0, top * 1.1)
    axes[0].set_ylabel(ylabel)
    handles = [Line2D([], [], color=VARIANT_COLORS[i % 6], marker=VARIANT_MARKERS[i % 6], lw=1.6,
                      ls="--" if v in same else "-", label=line_label(data, key, v, same))
               for i, v in enumerate(variants)]
    if key == "gpu_peak_gib":
        handles.append(Line2D([], [], color="gray", lw=1.6,
                              label="GPU peak (reserved + outside the allocator)"))
        handles.append(Line2D([], [], color="gray", lw=1.0, ls=":", label="allocated"))
    handles += [Line2D([], [], color="gray", marker="o", ls="", label="fits (GPU and host)"),
                Line2D([], [], color="gray", marker="o", ls="", markerfacecolor="white",
                       label="does not fit")]
    if limit is not None:
        handles.append(Line2D([], [], color="black", ls="--", lw=1.3, label=limit_label))
    if shaded:
        handles.append(Patch(color="0.85", label="gap: not evaluated (below)"))
    # Under the panels: the legend, then the gaps' reasons, one 8.5 pt line each.
    fig_h_px = fig.get_size_inches()[1] * DPI
    gaps_h = (14 * len(gaps) + 6) / fig_h_px if gaps else 0.0
    for i, line in enumerate(gaps):
        fig.text(0.01, (4 + 14 * (len(gaps) - 1 - i)) / fig_h_px, line, fontsize=8.5,
                 ha="left", va="bottom", color="0.25")
    below = legend_below(fig, handles, gaps_h)
    # The layout the plot holds, named; a point of another is named under the legend.
    held = "" if common is None else \
        f"\nlayout {common}" + (" (other points: below)" if others else " at every point")
    fig.suptitle(title + scope(data) + held, fontsize=12)
    fig.tight_layout(rect=(0, below, 1, 0.97 if not held else 0.93))
    save(fig, path)
    plt.close(fig)


# ---------------------------------------------------------------- plot 3: memory breakdown
def plot_memory(data, path):
    c = data["chosen"]
    b, lim = c["predicted"]["breakdown"], c["limits"]
    def lists(where):  # the plan's term lists that `where` picks, with their terms
        return [((g["key"], g["label"]), b.get(g["key"], [])) for g in c["terms"]
                if where(g["group"])]
    gpu = memory_groups(lists(lambda group: group.startswith("gpu_")))
    host = memory_groups(lists(lambda group: group == "host"))
    gpu_total, host_total = sum(g[2] for g in gpu), sum(g[2] for g in host)
    fig, axes = plt.subplots(1, 2, figsize=(13, 5.6))
    stacked_bar(axes[0], gpu, lim["gpu_memory_gib"],
                f"GPU memory per rank (busiest)\n{levels_line(c['predicted'], gpu_total)}; "
                f"limit {lim['gpu_memory_gib']:.1f} (dashed)", "GiB (2^30 bytes)")
    stacked_bar(axes[1], host, lim["host_ram_per_node_gib"],
                f"Host RAM per node (busiest)\ntotal {host_total:.1f} GiB; limit "
                f"{lim['host_ram_per_node_gib']:.0f} (dashed)", "GiB (2^30 bytes)")
    fig.suptitle(f"Memory of the chosen plan: {c['nodes']} node(s), offload {c['offload']}, "
                 f"optimizer {c['optimizer']}{scope(data)}", fontsize=12)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    save(fig, path)
    plt.close(fig)


# ---------------------------------------------------------------- plot 4: step time
def phase_kind(name):
    if name.endswith("_busy"):
        return "busy time of one resource"
    if name == "pipelined_chunks":
        return "chunk pipeline (makespan)"
    if name == "overlapped":
        return "hidden by overlap"
    return "other phase (state staging, ...)"


KIND_COLORS = {"busy time of one resource": "#4c72b0", "chunk pipeline (makespan)": "#dd8452",
               "hidden by overlap": "#55a868", "other phase (state staging, ...)": "#8172b3",
               "training-step term": "#c44e52"}


def hbars(ax, rows, total, total_label, title):
    names = [r[0] for r in rows][::-1]
    values = [r[1] for r in rows][::-1]
    colors = [KIND_COLORS[r[2]] for r in rows][::-1]
    ax.barh(names, values, color=colors)
    span = max(values + [total]) if values else total
    for y, v in enumerate(values):
        ax.text(v + span * 0.01, y, f"{v:.3f} s", va="center", fontsize=9)
    ax.axvline(total, color="black", ls="--", lw=1.3)
    ax.text(total, len(values) - 0.45, f" {total_label} {total:.3f} s", ha="left", va="bottom",
            fontsize=9, fontweight="bold")
    ax.set_xlim(0, span * 1.25)
    ax.set_ylim(-0.6, len(values) + 0.3)
    ax.set_xlabel("seconds")
    ax.set_title(title)


def plot_step(data, path):
    c = data["chosen"]
    p, b = c["predicted"], c["predicted"]["breakdown"]
    rows = [(t["name"], t["s"], phase_kind(t["name"])) for t in b["optimizer_step_s"]]
    training = b.get("training_step_s", [])
    panels = 2 if training and p.get("training_step_s") is not None else 1
    fig, axes = plt.subplots(1, panels, figsize=(13 if panels == 2 else 10, 4.8), squeeze=False)
    hbars(axes[0][0], rows, p["optimizer_step_s"], "optimizer step",
          f"Optimizer step, offload {c['offload']}: busy time per resource and pipelined "
          f"total{scope(data)}")
    kinds = sorted({r[2] for r in rows})
    if panels == 2:
        trows = [(t["name"], t["s"], "training-step term") for t in training]
        hbars(axes[0][1], trows, p["training_step_s"], "training step", "Training step terms")
        kinds.append("training-step term")
    below = legend_below(fig, [Patch(color=KIND_COLORS[k], label=k) for k in kinds])
    fig.tight_layout(rect=(0, below, 1, 1))
    save(fig, path)
    plt.close(fig)


# ---------------------------------------------------------------- plot 5: owner loads
# Past this many ranks a bar per rank is too thin to read and slow to draw (kimi-k2 at 16384
# nodes, 131072 ranks: 121 s and 274 MB; issue 33 item 16): the plot draws quantiles instead.
MAX_RANK_BARS = 256


def rank_profile(loads):
    """(values, quantiles): `loads` sorted busiest first, or past MAX_RANK_BARS ranks that many
    evenly spaced quantiles of them (nearest rank, the busiest and the least among them)."""
    ordered = sorted(loads, reverse=True)
    n = len(ordered)
    if n <= MAX_RANK_BARS:
        return ordered, False
    return [ordered[round(i * (n - 1) / (MAX_RANK_BARS - 1))] for i in range(MAX_RANK_BARS)], True


def plot_owners(data, path):
    strategies = data["owner_strategies"]
    c = data["chosen"]
    fig, axes = plt.subplots(2, 1, figsize=(13, 7.6))
    panels = [("alltoall_bytes", GB, "all-to-all GB sent per rank per step", "GB"),
              ("ns_flops", TFLOP, "Newton-Schulz TFLOP per rank per step", "TFLOP")]
    for ax, (key, scale, ylabel, unit) in zip(axes, panels):
        profiles = [rank_profile([v / scale for v in s[f"{key}_per_rank"]]) for s in strategies]
        loads = [values for values, _ in profiles]
        quantiles = any(q for _, q in profiles)
        top = max(max(per_rank) for per_rank in loads)
        low = min(min(per_rank) for per_rank in loads)
        # Loads differ by a few percent: start the axis near the lowest rank so it shows.
        base = max(0.0, low - (top - low) * 0.6) if top > low else 0.0
        base = 0.0 if base < 0.5 * top else base
        span = (top - base) if top > base else max(top, 1.0)
        ticks, labels = [], []
        for g, (s, per_rank) in enumerate(zip(strategies, loads)):
            n = len(per_rank)
            x0 = g * 1.25
            width = 1.0 / n
            xs = [x0 + (i + 0.5) * width for i in range(n)]
            color = STRATEGY_COLORS.get(s["owners"], "#333333")
            ax.bar(xs, per_rank, width=width * (0.85 if n <= 32 else 1.0), color=color,
                   edgecolor="none", linewidth=0)
            mx, mean = s[f"{key}_max"] / scale, s[f"{key}_mean"] / scale
            ax.hlines(mean, x0, x0 + 1.0, colors="black", linestyles="--", lw=1.3)
            ax.plot([x0 + 0.5 * width], [mx], marker="v", color="black", ms=7)
            excess = 100 * (mx / mean - 1) if mean > 0 else 0.0
            ax.text(x0 + 0.5, mx + span * 0.04,
                    f"max {mx:.4g} {unit}, mean {mean:.4g}\nmax is {excess:.1f}% above the mean",
                    ha="center", va="bottom", fontsize=8.5)
            ticks.append(x0 + 0.5)
            labels.append(s["owners"] + (" (plan)" if s["owners"] == c["owners"] else ""))
        ax.set_xticks(ticks)
        ax.set_xticklabels(labels)
        ax.set_ylim(base, top + span * 0.3)
        ax.set_ylabel(ylabel + ("" if base == 0 else f"\n(axis from {base:.3g})"))
        ax.grid(axis="x", visible=False)
    shown = (f"{MAX_RANK_BARS} quantiles of the ranks, busiest first" if quantiles
             else "sorted, busiest first")
    axes[0].set_title(f"Per-rank loads under each owner strategy ({c['world_size']} ranks, "
                      f"{shown}){scope(data)}")
    below = legend_below(fig, [Line2D([], [], color="black", ls="--", label="mean over ranks"),
                               Line2D([], [], color="black", marker="v", ls="",
                                      label="max (busiest rank)")])
    fig.tight_layout(rect=(0, below, 1, 1))
    save(fig, path)
    plt.close(fig)


# ---------------------------------------------------------------- plot 6: predicted vs measured
def plot_measured(data, path):
    runs = [(os.path.basename(m["path"]), measured_pairs(m)) for m in data["metrics"]]
    keys = sorted({k for _, pairs in runs for k, _, _ in pairs})
    key_markers = {k: VARIANT_MARKERS[i % 6] for i, k in enumerate(keys)}
    fig, (ax, sc) = plt.subplots(1, 2, figsize=(13, 6.4), gridspec_kw={"width_ratios": [3, 2]})
    width = 0.8 / max(1, len(runs))
    top = 1.0
    for r, (name, pairs) in enumerate(runs):
        # A figure predicted as zero has no ratio: no bar (the scatter skips it too).
        by_key = {k: (pv, mv) for k, pv, mv in pairs if pv}
        xs = [i + (r - (len(runs) - 1) / 2) * width for i, k in enumerate(keys) if k in by_key]
        ratios = [by_key[k][1] / by_key[k][0] for k in keys if k in by_key]
        color = VARIANT_COLORS[r % 6]
        ax.bar(xs, ratios, width=width * 0.9, color=color, label=name)
        for x, v in zip(xs, ratios):  # upright, so that neighbouring bars' figures stay apart
            ax.text(x, v, f" {v:.2f}", ha="center", va="bottom", fontsize=8, rotation=90)
        top = max([top] + ratios)
        for k, p, m in pairs:
            if p > 0 and m > 0:
                sc.scatter([p], [m], color=color, marker=key_markers[k], s=55, zorder=3,
                           edgecolors="black", linewidths=0.5)
    ax.axhline(1.0, color="black", lw=1.2)
    ax.set_ylim(0, top * 1.7)  # the upper third for the figures above the bars and the legend
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels(keys, rotation=90)  # long names, one per bar group
    ax.set_ylabel("measured / predicted")
    ax.set_title("Measured over predicted, per figure (1 = exact)" + scope(data))
    ax.legend(frameon=True, loc="upper right")
    values = [v for _, pairs in runs for _, p, m in pairs for v in (p, m) if v > 0]
    if values:
        lo, hi = min(values) / 2, max(values) * 2
        sc.plot([lo, hi], [lo, hi], color="black", ls="--", lw=1)
        sc.set_xlim(lo, hi)
        sc.set_ylim(lo, hi)
    sc.set_xscale("log")
    sc.set_yscale("log")
    sc.set_xlabel("predicted (in the figure's unit)")
    sc.set_ylabel("measured (same unit)")
    sc.set_title("Predicted vs measured (dashed: equal)")
    handles = [Line2D([], [], color=VARIANT_COLORS[r % 6], marker="o", ls="", label=name)
               for r, (name, _) in enumerate(runs)]
    handles += [Line2D([], [], color="white", markeredgecolor="black", marker=key_markers[k],
                       ls="", label=k) for k in keys]
    sc.legend(handles=handles, loc="upper left", fontsize=8, frameon=True)
    fig.tight_layout()
    save(fig, path)
    plt.close(fig)


# ---------------------------------------------------------------- report.md
# ---------------------------------------------------------------- Gantt: the pipeline over time
def gantt_rows(trace):
    """Stage events of a trace-event document grouped by track: {(pid, resource): [event]}.
    A track's place is its `tid`, which the trace gives each resource in the planner's order
    (docs/cli-contract.md, "Traces"): no list of resource names here."""
    rows = {}
    for e in trace["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") != "training_phase":
            rows.setdefault((e["pid"], e["args"]["resource"]), []).append(e)
    return rows


def plot_gantt(data, path):
    """The predicted pipeline (one row per resource), and beside it the measured step (one row
    per rank and resource) when a trace was given; one color per stage category."""
    panels = [("Predicted (planner's simulator)" + scope(data), data["predicted_trace"])]
    if data.get("measured_trace"):
        panels.append(("Measured (muonplan execute --trace)", data["measured_trace"]))
    cats = sorted({e["cat"] for _, t in panels for e in t["traceEvents"]
                   if e.get("ph") == "X" and e.get("cat") != "training_phase"})
    cmap = plt.get_cmap("tab20")  # up to 15 stage names: distinct colors
    color = {c: cmap(i % 20) for i, c in enumerate(cats)}
    fig, axes = plt.subplots(1, len(panels), figsize=(7 * len(panels), 4.2), squeeze=False)
    for ax, (title, trace) in zip(axes[0], panels):
        rows = gantt_rows(trace)
        keys = sorted(rows, key=lambda k: (k[0], rows[k][0]["tid"]))
        for y, key in enumerate(keys):
            bars = [(e["ts"] / 1e3, e["dur"] / 1e3) for e in rows[key]]
            ax.broken_barh(bars, (y - 0.4, 0.8),
                           facecolors=[color[e["cat"]] for e in rows[key]], linewidth=0)
        multi = len({k[0] for k in keys}) > 1
        ax.set_yticks(range(len(keys)))
        ax.set_yticklabels([f"rank {p} {r}" if multi else r for p, r in keys])
        ax.invert_yaxis()
        ax.set_xlabel("time in the step, ms")
        ax.set_title(title)
    handles = [Patch(color=color[c], label=c) for c in cats]
    # The legend's rows are added to the height, so the chart keeps its size.
    fig.set_size_inches(fig.get_size_inches()[0], 4.2 + 0.2 * -(-len(cats) // 3))
    below = legend_below(fig, handles)
    fig.tight_layout(rect=(0, below, 1, 1))
    save(fig, path)
    plt.close(fig)


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: report.py DATA_JSON OUT_DIR")
    with open(argv[1]) as f:
        data = json.load(f)
    if data.get("schema") != "muonplan.report/1":
        sys.exit(f"{argv[1]}: schema: expected muonplan.report/1, got {data.get('schema')!r}")
    out = argv[2]
    os.makedirs(out, exist_ok=True)
    lim = data["chosen"]["limits"]
    images = []

    def add(name, title, caption, draw):
        draw(os.path.join(out, name))
        images.append((name, title, caption))

    add("gpu_peak_vs_nodes.png", "GPU memory per rank vs node count",
        "Predicted GPU peak of the busiest rank for each offload mode (panel) and optimizer "
        "(line); dashed: the GPU limit; hollow markers do not fit.",
        lambda path: plot_sweep(data, "gpu_peak_gib", lim["gpu_memory_gib"],
                                f"GPU limit {lim['gpu_memory_gib']:.1f} GiB",
                                "GPU peak per rank, GiB", "GPU memory per rank vs node count",
                                path))
    add("host_ram_vs_nodes.png", "Host RAM per node vs node count",
        "Predicted host RAM of the busiest node for each offload mode (panel) and optimizer "
        "(line); dashed: the host RAM limit.",
        lambda path: plot_sweep(data, "host_ram_per_node_gib", lim["host_ram_per_node_gib"],
                                f"host RAM limit {lim['host_ram_per_node_gib']:.0f} GiB",
                                "host RAM per node, GiB", "Host RAM per node vs node count", path))
    # With a workload the node count is decided on the training step, so that is what is drawn.
    training = data["inputs"].get("workload") is not None
    step_key = "training_step_s" if training else "optimizer_step_s"
    step_name = "Training step" if training else "Optimizer step"
    add("step_time_vs_nodes.png", f"{step_name} time vs node count",
        f"Predicted {step_name.lower()} time for each offload mode (panel) and optimizer (line); "
        "hollow markers do not fit (docs/planner.md sections 7 and 8).",
        lambda path: plot_sweep(data, step_key, None, "", f"{step_name.lower()}, s",
                                f"{step_name} time vs node count", path))
    add("memory_breakdown.png", "Memory breakdown of the chosen plan",
        "The chosen plan's GPU memory per rank and host RAM per node, term by term "
        "(docs/planner.md sections 4 and 5).", lambda path: plot_memory(data, path))
    add("step_time_breakdown.png", "Optimizer-step time of the chosen plan",
        "Busy time of each resource over the step, the pipelined makespan of the chunks, the "
        "time hidden by overlap; dashed: the predicted optimizer step.",
        lambda path: plot_step(data, path))
    add("owner_loads.png", "Per-rank loads by owner strategy",
        "All-to-all bytes and Newton-Schulz FLOPs of every rank of the chosen plan under each "
        f"owner strategy, sorted (past {MAX_RANK_BARS} ranks, that many quantiles of them); "
        "the step waits for the busiest rank.",
        lambda path: plot_owners(data, path))
    add("pipeline_gantt.png", "Optimizer-step pipeline",
        "The chosen plan's chunks as the planner's pipeline simulator schedules them, one row "
        "per resource" + (", beside the measured step of every rank" if data.get("measured_trace")
                          else "") + "; open the traces in Perfetto for detail (docs/report.md).",
        lambda path: plot_gantt(data, path))
    if data["metrics"]:
        add("predicted_vs_measured.png", "Predicted vs measured",
            "Executor metrics beside the plan's predictions for every figure both have.",
            lambda path: plot_measured(data, path))
    text = markdown(data, images).encode()
    write_atomic(os.path.join(out, "report.md"), lambda f: f.write(text))


if __name__ == "__main__":
    try:
        main(sys.argv)
    except WriteError as e:
        sys.exit(f"report.py: {e}")
