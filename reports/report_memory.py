"""The memory breakdown's groups and bars (report.py's plot 3): which named groups a bar of
the plan's term lists draws, and how each is labelled."""
import matplotlib.pyplot as plt

# By the plan's term-list key (plan.json's `terms`); a list not named here is drawn grey.
GROUP_CMAPS = {"gpu_persistent_gib": "Blues", "gpu_transient_gib": "Oranges",
               "gpu_fixed_gib": "Greys", "gpu_workload_gib": "Greens", "gpu_runtime_gib": "YlOrBr",
               "gpu_reserve_gib": "Reds", "host_per_node_gib": "Purples"}
# A bar names at most this many groups, so that every group's label and total can be read.
MAX_MEMORY_GROUPS = 8


def same_gib(a, b):
    """Two levels print as one figure (0.1 GiB): drawn as one line, labelled as coinciding."""
    return round(a, 1) == round(b, 1)


def coinciding(levels, total):
    """`levels` (value, label) less those at the total, those at one value joined: "allocated =
    reserved" (a runtime without allocator reserve has the two equal)."""
    merged = []
    for value, label in levels:
        if same_gib(value, total):
            continue
        if merged and same_gib(merged[-1][0], value):
            merged[-1] = (merged[-1][0], f"{merged[-1][1]} = {label}")
        else:
            merged.append((value, label))
    return merged


def memory_groups(lists):
    """The named groups of one memory bar, bottom up, as (cmap key, label, GiB, term count).
    `lists` are the plan's term lists the bar draws ((key, label), [term]), in the plan's order
    (plan.json's `terms`, planfile prediction_terms.h). A bar of several lists draws one group
    per list that has terms; a bar of one list (host RAM) draws its terms, the largest
    MAX_MEMORY_GROUPS - 1 by name and the rest as one "other" group, so no bar names more than
    MAX_MEMORY_GROUPS."""
    lists = [(k, ts) for k, ts in lists if ts]
    if len(lists) != 1:
        return [(key, label, sum(t["gib"] for t in ts), len(ts)) for (key, label), ts in lists]
    (key, _), terms = lists[0]
    if len(terms) > MAX_MEMORY_GROUPS:
        kept = sorted(terms, key=lambda t: -t["gib"])[:MAX_MEMORY_GROUPS - 1]
        rest = [t for t in terms if t not in kept]
        terms = [t for t in terms if t in kept]
        return [(key, t["name"], t["gib"], 1) for t in terms] + \
            [(key, f"other {len(rest)} terms", sum(t["gib"] for t in rest), len(rest))]
    return [(key, t["name"], t["gib"], 1) for t in terms]


def stacked_bar(ax, groups, limit, title, ylabel):
    """One bar of `groups` (memory_groups), the limit dashed. Each group is labelled in a
    column beside the bar, evenly spaced and tied to its segment by a line, so that thin
    segments keep a readable label and total."""
    total = sum(g[2] for g in groups)
    top = max(limit, total) * 1.12
    bottom = 0.0
    slots = len(groups)
    for i, (key, label, gib, count) in enumerate(groups):
        cmap = plt.get_cmap(GROUP_CMAPS.get(key, "Greys"))
        color = cmap(0.35 + 0.5 * (i % 2)) if len({g[0] for g in groups}) == 1 else cmap(0.6)
        ax.bar([0], [gib], bottom=bottom, width=0.5, color=color, edgecolor="white")
        label_y = top * (0.04 + 0.9 * (i + 0.5) / slots)
        terms = f" ({count} terms)" if count > 1 else ""
        ax.annotate(f"{label}: {gib:.2f} GiB{terms}", (0.25, bottom + gib / 2),
                    xytext=(0.45, label_y), va="center", ha="left", fontsize=8.5,
                    arrowprops={"arrowstyle": "-", "color": "0.5", "lw": 0.8})
        bottom += gib
    ax.axhline(limit, color="black", ls="--", lw=1.3)
    ax.set_xlim(-0.4, 2.6)
    ax.set_ylim(0, top)
    ax.set_xticks([])
    ax.grid(axis="x", visible=False)
    ax.set_title(title, fontsize=10)
    ax.set_ylabel(ylabel)


def levels_line(pred, total):
    """The GPU bar's levels, allocated -> reserved -> peak, for its title; equal ones joined."""
    levels = [(pred[k], label) for k, label in [("gpu_allocated_gib", "allocated"),
                                                ("gpu_reserved_gib", "reserved")] if k in pred]
    said = [f"{label} {value:.1f}" for value, label in coinciding(levels, total)]
    at_total = [label for value, label in levels if same_gib(value, total)]
    return ", ".join(said + [" = ".join(at_total + ["peak"]) + f" {total:.1f} GiB"])
