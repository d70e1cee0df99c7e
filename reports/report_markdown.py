"""report.md's text: every number from report-data.json, one function per section
(report.py draws the plots and calls markdown()), and each sweep point's layout, which the
plots name too."""
import textwrap

# How report.md prints the plan's term units (plan.json's `terms`: gib, gb, s).
UNIT_LABELS = {"gib": "GiB", "gb": "GB", "s": "s"}
VARIANT_LABELS = {
    "muon": "Muon (fp32 momentum)",
    "muon-bf16-momentum": "Muon, bf16 momentum",
    "adamw": "AdamW",
    "signsgd": "signSGD",
}


def md_text(text):
    """A name or path safe inside a report.md heading or table cell: control characters (C0, DEL,
    C1, line separators, bidi overrides) escaped as \\xNN or \\uNNNN, so a newline cannot end a
    heading; '|' and '`' escaped, so a table cell or code span stays one. muonplan refuses such
    names; paths may still hold them."""
    out = []
    for ch in str(text):
        cp = ord(ch)
        if cp < 0x20 or 0x7F <= cp <= 0x9F or cp in (0x2028, 0x2029) or \
                0x202A <= cp <= 0x202E or 0x2066 <= cp <= 0x2069:
            out.append(f"\\x{cp:02X}" if cp < 0x100 else f"\\u{cp:04X}")
        elif ch in "|`\\":
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def variant_label(name):
    return VARIANT_LABELS.get(name, name)


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def measured_pairs(m):
    """Every figure both sides have, as (key, predicted, measured), numbers only."""
    measured, predicted = m["measured"], m["predicted"]
    pairs = []
    for key, pv in predicted.items():
        mv = measured.get(key)  # measured figures carry the prediction's names and units
        gb_twin = key.replace("_bytes_", "_gb_")
        if gb_twin != key and gb_twin in predicted and gb_twin in measured:
            continue  # the same figure in GB is listed
        if is_number(pv) and is_number(mv):
            pairs.append((key, float(pv), float(mv)))
    return pairs


def fmt(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


def md_inputs(data):
    """The title and the inputs table."""
    c, inp = data["chosen"], data["inputs"]
    lim = c["limits"]
    w = inp["workload"]
    workload = ("none: the optimizer step alone (params, grads, optimizer state, step buffers)"
                if w is None else
                f"{w['tokens_per_step']} tokens per step, sequence length {w['seq_len']}, "
                f"{w['micro_batch_seqs']} sequence(s) per micro step, AC {w['ac']}"
                f"{', AC offload' if w['ac_offload'] else ''}")
    nodes = inp["node_counts"]
    model, topology = md_text(data["model"]), md_text(data["topology"])
    out = [f"# Capacity report: {model} on {topology}", "",
           "Written by `muonplan report` from `report-data.json` (every number below is in it).",
           "", "## Inputs", "", "| input | value |", "| --- | --- |",
           f"| model | {model} (`{md_text(inp['model_path'])}`) |",
           f"| topology | {topology} (`{md_text(inp['topology_path'])}`), "
           f"{data['gpus_per_node']} GPUs per node |",
           f"| node counts | {', '.join(str(n) for n in nodes)} |",
           f"| layout | {inp['layout']} |",
           f"| optimizer | {inp['optimizer']}{', bf16 momentum' if inp['bf16_momentum'] else ''}"
           f"{', Nesterov' if inp['nesterov'] else ''}; NS schedule {inp['ns_schedule']}; "
           f"owners {inp['owners']} |",
           f"| workload | {workload} |",
           f"| limits | GPU {lim['gpu_memory_gib']:.1f} GiB per GPU, host RAM "
           f"{lim['host_ram_per_node_gib']:.0f} GiB per node |"]
    if inp["metrics"]:
        out.append(f"| metrics | {', '.join('`' + m + '`' for m in inp['metrics'])} |")
    return out


def md_decision(data):
    """The chosen configuration, the reason, and the search's candidates."""
    c, nodes = data["chosen"], data["inputs"]["node_counts"]
    out = ["", "## Decision", "",
            f"**Chosen:** {c['nodes']} node(s) x {c['gpus_per_node']} GPUs "
            f"(world {c['world_size']}), layout fsdp={c['layout']['fsdp']},cp={c['layout']['cp']},"
            f"ep={c['layout']['ep']}, offload {c['offload']}, optimizer {c['optimizer']}"
            f"{'' if c['fits'] else ' (NO FIT: closest candidate)'}", "",
            f"**Reason:** {c['decision']['reason']}", "",
            "Candidates of the search over the swept node counts (from the fewest up, stopping "
            "at the first where something fits; for a sweep from 1, `muonplan plan --max-nodes "
            f"{max(nodes)}`):", "",
            "| nodes | layout | offload | fits | GPU peak GiB | host GiB/node | step s | GPU-s |",
            "| ---: | --- | --- | --- | ---: | ---: | ---: | ---: |"]
    # One row per candidate with its layout; "(chosen)" marks the plan's own candidate, and
    # only when it fits (a plan that fits nowhere shows its closest as "(closest)").
    layout = f"fsdp={c['layout']['fsdp']},cp={c['layout']['cp']},ep={c['layout']['ep']}"
    tag = " **(chosen)**" if c["fits"] else " (closest)"
    for cand in c["decision"]["candidates"]:
        if "gpu_peak_gib" not in cand:
            out.append(f"| {cand['nodes']} | {cand.get('layout', '-')} | {cand['offload']} | - | "
                       f"{cand.get('note', '')} | | | |")
            continue
        mine = (cand["nodes"], cand["offload"], cand.get("layout")) == \
            (c["nodes"], c["offload"], layout)
        mark = tag if mine and cand["fits"] == c["fits"] else ""
        out.append(f"| {cand['nodes']} | {cand.get('layout', '-')} | {cand['offload']}{mark} | "
                   f"{'yes' if cand['fits'] else 'no'} | {cand['gpu_peak_gib']:.1f} | "
                   f"{cand['host_ram_per_node_gib']:.1f} | {cand['step_s']:.3f} | "
                   f"{cand['gpu_seconds']:.2f} |")
    return out


def md_chosen(data, images):
    """The chosen plan's headline figures, then the plots."""
    p = data["chosen"]["predicted"]
    out = ["", "## Chosen plan", "",
            f"- GPU peak {p['gpu_peak_gib']:.2f} GiB per rank (step transient "
            f"{p['gpu_transient_gib']:.2f} GiB); host RAM {p['host_ram_per_node_gib']:.1f} GiB "
            "per node",
            f"- GPU allocated {p.get('gpu_allocated_gib', 0):.2f} GiB, reserved "
            f"{p.get('gpu_reserved_gib', 0):.2f} GiB, outside the allocator "
            f"{p.get('gpu_outside_allocator_gib', 0):.2f} GiB (runtime "
            f"{data['chosen'].get('runtime', {}).get('name', 'muonplan')})",
            f"- all-to-all {p['alltoall_gb_per_rank_max']:.3f} GB per rank (max); H2D "
            f"{p['h2d_gb_per_gpu']:.2f} GB, D2H {p['d2h_gb_per_gpu']:.2f} GB per GPU",
            f"- optimizer step {p['optimizer_step_s']:.3f} s"
            + ("" if p.get("training_step_s") is None
               else f"; training step {p['training_step_s']:.3f} s"),
            "", "## Plots", ""]
    for i, (name, title, caption) in enumerate(images, 1):
        out += [f"### {i}. {title}", "", f"![{title}]({name})", "", f"*{caption}*", ""]
    return out


def layout_form(point):
    """A sweep point's layout, as one can hold it across node counts: the FSDP group's share of
    the world (all of it but CP and replicas), cp and ep."""
    lay = point["layout"]
    replicas = point["world_size"] // (lay["fsdp"] * lay["cp"])
    rest = f", dp_replicate={replicas}" if replicas > 1 else ""
    fsdp = "fsdp=all GPUs" if lay["cp"] == 1 else "fsdp=GPUs/cp"
    return f"{fsdp}, cp={lay['cp']}, ep={lay['ep']}{rest}"


def common_layout(forms):
    """The layout most points have (the first in sorted order among equals)."""
    return max(sorted(set(forms)), key=forms.count)


# The footnote names at most this many point groups of another layout; the rest are counted.
MAX_LAYOUT_LINES = 3


def sweep_layouts(data):
    """(the layout most evaluated points have, [(layout, mode, [variants], [nodes])] for the
    others): every point is labelled, by the plot's title or by a footnote line."""
    pts = [p for p in data["sweep"] if p["evaluated"]]
    if not pts:
        return None, []
    forms = [layout_form(p) for p in pts]
    common = common_layout(forms)
    groups = {}
    for p, form in zip(pts, forms):
        if form != common:
            groups.setdefault((form, p["offload"], p["optimizer"]), []).append(p["nodes"])
    merged = {}  # variants with the same layout at the same counts share a line
    for (form, mode, variant), nodes in groups.items():
        merged.setdefault((form, mode, tuple(nodes)), []).append(variant)
    return common, [(form, mode, variants, list(nodes))
                    for (form, mode, nodes), variants in merged.items()]


def layout_lines(others, width_chars=150):
    out = []
    for form, mode, variants, nodes in others[:MAX_LAYOUT_LINES]:
        names = " and ".join(variant_label(v) for v in variants)
        counts = ", ".join(str(n) for n in nodes)
        out += textwrap.wrap(f"Layout {form} at offload {mode}, {names}: {counts} node(s)",
                             width_chars)
    rest = sum(len(v) * len(n) for _, _, v, n in others[MAX_LAYOUT_LINES:])
    if rest:
        out.append(f"{rest} more point(s) of other layouts: report.md, the sweep table")
    return out


def md_sweep(data):
    """GPU peak and host RAM of every configuration of the sweep."""
    nodes, asked = data["sweep_node_counts"], data["inputs"]["node_counts"]
    sampled = ([] if len(nodes) == len(asked) else
               [f"The sweep is sampled: {len(nodes)} of the {len(asked)} node counts asked "
                f"({asked[0]} to {asked[-1]}), evenly spaced, the chosen one among them; the "
                "decision above searched them all.", ""])
    forms = [layout_form(p) for p in data["sweep"] if p["evaluated"]]
    common = common_layout(forms) if forms else "-"
    out = ["## Every configuration of the sweep", ""] + sampled + [
            "GPU peak GiB per rank / host RAM GiB per node; a trailing `*` marks a fit; "
            f"layout {common} unless the cell names another.", "",
            "| nodes | offload | " + " | ".join(variant_label(v) for v in data["optimizer_variants"])
            + " |", "| ---: | --- |" + " ---: |" * len(data["optimizer_variants"])]
    notes = []
    for n in nodes:
        for mode in data["offload_modes"]:
            cells = []
            for v in data["optimizer_variants"]:
                pt = next((q for q in data["sweep"] if q["nodes"] == n and q["offload"] == mode
                           and q["optimizer"] == v), None)
                if pt is None or not pt["evaluated"]:
                    cells.append("-")
                    if pt is not None and pt["note"] not in notes:
                        notes.append(pt["note"])
                else:
                    q = pt["predicted"]
                    form = layout_form(pt)
                    cells.append(f"{q['gpu_peak_gib']:.1f} / {q['host_ram_per_node_gib']:.0f}"
                                 f"{' *' if pt['fits'] else ''}"
                                 f"{'' if form == common else ' (' + form + ')'}")
            out.append(f"| {n} | {mode} | " + " | ".join(cells) + " |")
    if notes:
        out += ["", "`-`: not evaluated: " + "; ".join(notes) + "."]
    return out


def md_terms(data):
    """Every named term of the chosen plan."""
    p = data["chosen"]["predicted"]
    out = ["", "## Terms of the chosen plan", "",
            "Busiest rank (GPU) and busiest node (host); docs/planner.md defines each term.", "",
            "| group | term | value | formula |", "| --- | --- | ---: | --- |"]
    for group in data["chosen"]["terms"]:  # the plan's own table of term lists
        unit = UNIT_LABELS[group["unit"]]
        digits = 4 if group["unit"] == "s" else 3
        for t in p["breakdown"].get(group["key"], []):
            out.append(f"| {group['label']} | `{t['name']}` | {t[group['unit']]:.{digits}f} "
                       f"{unit} | {t['formula']} |")
    return out


def md_measured(data):
    """Predicted next to measured, per metrics file given."""
    out = []
    if data["metrics"]:
        out += ["", "## Predicted and measured", "",
                "| metrics file | figure | predicted | measured | measured / predicted |",
                "| --- | --- | ---: | ---: | ---: |"]
        for m in data["metrics"]:
            for k, pv, mv in measured_pairs(m):
                ratio = f"{mv / pv:.3f}" if pv else "-"
                out.append(f"| `{m['path']}` | `{k}` | {pv:.6g} | {mv:.6g} | {ratio} |")
    return out


def markdown(data, images):
    """report.md: `images` are (file name, title, caption) of the plots, in order."""
    return "\n".join(md_inputs(data) + md_decision(data) + md_chosen(data, images)
                     + md_sweep(data) + md_terms(data) + md_measured(data)) + "\n"
