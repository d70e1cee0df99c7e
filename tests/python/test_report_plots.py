"""The report's plots show the decision (issue 36 item 8): every plot of a report for three
models, with and without a workload, has no text outside the figure and no two texts
overlapping (reports/check_plot_text.py); the memory breakdown names at most 8 groups that add
up to the plan's figures; node counts the workload cannot use are a gap with its reason; lines
that coincide say so; every sweep point's layout is named, by the title (the layout the plot
holds) or by a line under the legend, and a plan without a workload says "optimizer step only"
in every plot's title (issue 50 item 10)."""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

from testenv import BIN, mpiexec, path

sys.path.insert(0, path("reports"))
import check_plot_text  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402  (Agg: report.py chose it on import)
import report  # noqa: E402

GLM_WORKLOAD = "glm-4.5-air +workload"


def plan_json(model, *flags):
    out = subprocess.run([BIN, "plan", "--model", model, "--json", *flags],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def bar_lists(plan, where):
    """The memory bar's lists as plot_memory picks them from the plan's `terms` table."""
    b = plan["predicted"]["breakdown"]
    return [((g["key"], g["label"]), b.get(g["key"], [])) for g in plan["terms"]
            if where(g["group"])]


class PlotText(unittest.TestCase):
    """One render of all six reports (about 90 s on two busy cores); the tests read it."""

    @classmethod
    def setUpClass(cls):
        cls.problems, cls.texts = check_plot_text.check(BIN)

    def test_every_plot_of_six_reports_was_checked(self):
        tags = {tag for tag, _ in self.texts}
        self.assertEqual(len(tags), 6, tags)
        self.assertEqual(len(self.texts), 6 * 7, sorted(self.texts))  # 7 plots, no metrics

    def test_no_text_outside_the_figure_or_overlapping_another(self):
        self.assertEqual(self.problems, [])

    def test_predicted_vs_measured_with_three_metrics_files(self):
        # Six figures per run, some predicted as zero (offload none moves nothing over PCIe):
        # no ratio, so no bar and no "nan".
        metrics = [path(f"tests/data/calibration/cpu/dense-{m}.metrics.json")
                   for m in ("full", "none", "optimizer")]
        problems, texts = check_plot_text.check(BIN, ["tiny-dense"], [["--metrics", *metrics]])
        self.assertEqual(problems, [])
        drawn = texts[("tiny-dense +metrics", "predicted_vs_measured.png")]
        self.assertNotIn("nan", " ".join(drawn))
        self.assertIn("dense-none.metrics.json", drawn)

    def test_pipeline_gantt_beside_a_measured_trace(self):
        # The Gantt's second panel (execute --trace: a row per rank and resource) passes the
        # same check as every other plot.
        cpu = ["--topology", path("topologies/cpu-ci.yaml"), "--gpus-per-node", "2"]
        model = path("models/tiny-dense.yaml")
        with tempfile.TemporaryDirectory() as d:
            plan, trace = os.path.join(d, "p.json"), os.path.join(d, "trace.json")
            subprocess.run([BIN, "plan", "--model", model, *cpu, "--nodes", "1", "--offload",
                            "none", "--out", plan], check=True, capture_output=True)
            r = mpiexec(2, BIN, "execute", "--plan", plan, "--trace", trace)
            self.assertEqual(r.returncode, 0, r.stderr)
            problems, texts = check_plot_text.check(BIN, [model], [[*cpu, "--trace", trace]],
                                                    nodes="1..2")
        self.assertEqual(problems, [])
        (gantt,) = [t for (tag, plot), t in texts.items() if plot == "pipeline_gantt.png"]
        self.assertIn("Measured (muonplan execute --trace)", gantt)
        self.assertIn("rank 1 gpu", gantt)

    def test_the_workload_gap_is_drawn_with_its_reason(self):
        # 64 sequences of 4096 tokens do not split over 3 nodes' data-parallel groups (cp 8).
        for plot in ("gpu_peak_vs_nodes.png", "host_ram_vs_nodes.png", "step_time_vs_nodes.png"):
            texts = self.texts[(GLM_WORKLOAD, plot)]
            said = " ".join(t for t in texts if t.startswith("Gap at") or "sequences" in t)
            self.assertIn("Gap at 3 node(s)", said, plot)
            self.assertIn("do not split over 3 data-parallel groups", " ".join(said.split()))
            self.assertEqual(texts.count("gap"), 3, plot)  # shaded in each offload panel

    def test_no_gap_without_a_workload(self):
        texts = self.texts[("glm-4.5-air", "gpu_peak_vs_nodes.png")]
        self.assertFalse([t for t in texts if t.startswith("Gap at")], texts)

    def test_coinciding_lines_are_named(self):
        # Without offload the host keeps only per-process overhead: every optimizer's line is
        # Muon's, and the legend says so at offload none.
        texts = self.texts[(GLM_WORKLOAD, "host_ram_vs_nodes.png")]
        self.assertIn("AdamW (same as Muon (fp32 momentum) at offload none)", texts)
        self.assertIn("Muon (fp32 momentum)", texts)

    def test_memory_groups_are_labelled_with_totals(self):
        texts = self.texts[(GLM_WORKLOAD, "memory_breakdown.png")]
        workload = [t for t in texts if t.startswith("GPU workload: ")]
        self.assertEqual(len(workload), 1, texts)
        # Under the pytorch runtime the terms are the timeline's kinds live at the allocated
        # peak (a layer's backward): at least the layer's tensors, FSDP2's buffers, the inputs.
        m = re.match(r"^GPU workload: \d+\.\d\d GiB \((\d+) terms\)$", workload[0])
        self.assertTrue(m, workload[0])
        self.assertGreaterEqual(int(m.group(1)), 5)


    def test_without_a_workload_every_title_says_optimizer_step_only(self):
        for (tag, plot), texts in self.texts.items():
            with self.subTest(tag=tag, plot=plot):
                said = any("optimizer step only" in t for t in texts)
                self.assertEqual(said, "+workload" not in tag, texts)

    def test_every_sweep_point_has_its_layout_named(self):
        for (tag, plot), texts in self.texts.items():
            if not plot.endswith("_vs_nodes.png"):
                continue
            with self.subTest(tag=tag, plot=plot):
                (title,) = [t for t in texts if "\nlayout fsdp=" in t]
                others = [t for t in texts if t.startswith("Layout fsdp=")]
                self.assertEqual(title.endswith("(other points: below)"), bool(others), texts)
                self.assertEqual(title.endswith(" at every point"), not others, texts)
        # GLM-4.5-Air without a workload: Muon under full offload takes ep=8 at 3 nodes (its
        # GPU peak line went 26.7 -> 20.2 -> 13.8 GiB over three layouts, unlabelled).
        texts = self.texts[("glm-4.5-air", "gpu_peak_vs_nodes.png")]
        self.assertIn("GPU memory per rank vs node count, optimizer step only\nlayout "
                      "fsdp=all GPUs, cp=1, ep=1 (other points: below)", texts)
        self.assertTrue(any(t.startswith("Layout fsdp=all GPUs, cp=1, ep=8 at offload full, "
                                         "Muon (fp32 momentum)") for t in texts), texts)


class SweepLayouts(unittest.TestCase):
    """Each point's layout: the most common one in the title, every other one's points listed
    (mode, variants, node counts); past MAX_LAYOUT_LINES groups, a count."""

    @staticmethod
    def point(nodes, mode, variant, ep, cp=1, replicas=1):
        world = 8 * nodes
        return {"nodes": nodes, "offload": mode, "optimizer": variant, "evaluated": True,
                "world_size": world, "layout": {"fsdp": world // (cp * replicas), "cp": cp,
                                                "ep": ep}}

    def test_common_and_others(self):
        pts = [self.point(n, m, v, 1) for n in (1, 2, 4) for m in ("none", "full")
               for v in ("muon", "adamw")]
        pts[-1] = self.point(4, "full", "adamw", 8)
        pts[-2] = self.point(4, "full", "muon", 8)
        pts.append(self.point(8, "none", "muon", 1, cp=2, replicas=2))
        common, others = report.sweep_layouts({"sweep": pts})
        self.assertEqual(common, "fsdp=all GPUs, cp=1, ep=1")
        self.assertEqual(others, [("fsdp=all GPUs, cp=1, ep=8", "full", ["muon", "adamw"], [4]),
                                  ("fsdp=GPUs/cp, cp=2, ep=1, dp_replicate=2", "none", ["muon"],
                                   [8])])
        self.assertEqual(report.layout_lines(others),
                         ["Layout fsdp=all GPUs, cp=1, ep=8 at offload full, Muon (fp32 "
                          "momentum) and AdamW: 4 node(s)",
                          "Layout fsdp=GPUs/cp, cp=2, ep=1, dp_replicate=2 at offload none, "
                          "Muon (fp32 momentum): 8 node(s)"])

    def test_past_the_lines_shown_the_points_are_counted(self):
        others = [(f"fsdp=all GPUs, cp=1, ep={e}", "none", ["muon", "adamw"], [1, 2])
                  for e in (2, 4, 8, 16, 32)]
        lines = report.layout_lines(others)
        self.assertEqual(len(lines), report.MAX_LAYOUT_LINES + 1)
        self.assertEqual(lines[-1], "8 more point(s) of other layouts: report.md, the sweep table")


class Checker(unittest.TestCase):
    """The checker finds what it is for and not what the figure does not draw."""

    def test_overlap_and_outside_are_found(self):
        fig, ax = plt.subplots(figsize=(4, 3))
        ax.text(0.5, 0.5, "first label", transform=ax.transAxes)
        ax.text(0.52, 0.5, "second label", transform=ax.transAxes)
        fig.text(0.9, 0.5, "runs off the right edge")
        kinds = sorted(p[1] for p in check_plot_text.text_problems(fig, "t.png"))
        plt.close(fig)
        self.assertEqual(kinds, ["outside", "overlap"])

    def test_ticks_outside_the_view_are_not_drawn_texts(self):
        # A log axis keeps label texts for decades beyond its limits; they are not drawn.
        fig, ax = plt.subplots(figsize=(4, 3))
        ax.plot([1, 2], [3, 300])
        ax.set_yscale("log")
        ax.set_ylim(2, 500)
        fig.tight_layout()
        self.assertEqual(check_plot_text.text_problems(fig, "t.png"), [])
        labels = [t.get_text() for t in check_plot_text.drawn_tick_labels(ax.yaxis)]
        plt.close(fig)
        self.assertIn("$\\mathdefault{10^{2}}$", labels)
        self.assertNotIn("$\\mathdefault{10^{0}}$", labels)


class SweepGaps(unittest.TestCase):
    def sweep(self, gaps):
        pts = [{"nodes": n, "offload": m, "optimizer": "muon", "evaluated": False,
                "note": f"{n} groups do not split"} for n in gaps for m in ("none", "full")]
        return {"sweep": pts + [{"nodes": 1, "offload": "none", "optimizer": "muon",
                                 "evaluated": True, "note": ""}]}

    def test_each_reason_once_with_its_counts_and_modes(self):
        gaps = report.sweep_gaps(self.sweep([3]))
        self.assertEqual(gaps, [("3 groups do not split", [3], ["none", "full"])])
        self.assertEqual(report.gap_lines(gaps),
                         ["Gap at 3 node(s), offload none, full: not evaluated: 3 groups do "
                          "not split"])

    def test_past_the_reasons_shown_the_other_counts_are_listed(self):
        lines = report.gap_lines(report.sweep_gaps(self.sweep([3, 5, 6, 7, 9])))
        self.assertEqual(len([l for l in lines if l.startswith("Gap at")]),
                         report.MAX_GAP_REASONS)
        self.assertEqual(lines[-1], "Gaps also at 3 more node count(s): 6, 7, 9 (each one's "
                                    "reason: report.md, the sweep table)")


class MemoryGroups(unittest.TestCase):
    def test_gpu_groups_are_the_plans_lists_and_add_up_to_the_peak(self):
        plan = plan_json("glm-4.5-air", "--tokens-per-step", "262144", "--seq-len", "4096")
        gpu = report.memory_groups(bar_lists(plan, lambda g: g.startswith("gpu_")))
        # Each non-empty list, in the plan's order (the step transient is empty when the
        # allocated peak falls in backward, outside the optimizer step).
        lists = ["gpu_persistent_gib", "gpu_transient_gib", "gpu_workload_gib",
                 "gpu_runtime_gib", "gpu_reserve_gib", "gpu_fixed_gib"]
        self.assertEqual([g[0] for g in gpu],
                         [k for k in lists if plan["predicted"]["breakdown"][k]])
        self.assertIn("gpu_workload_gib", [g[0] for g in gpu])
        self.assertLessEqual(len(gpu), report.MAX_MEMORY_GROUPS)
        self.assertAlmostEqual(sum(g[2] for g in gpu), plan["predicted"]["gpu_peak_gib"], 2)
        host = report.memory_groups(bar_lists(plan, lambda g: g == "host"))
        self.assertLessEqual(len(host), report.MAX_MEMORY_GROUPS)
        self.assertAlmostEqual(sum(g[2] for g in host),
                               plan["predicted"]["host_ram_per_node_gib"], 1)

    def test_a_long_single_list_keeps_the_largest_and_sums_the_rest(self):
        terms = [{"name": f"t{i}", "gib": float(i)} for i in range(12)]  # 0 .. 11 GiB
        groups = report.memory_groups([(("host_per_node_gib", "host RAM"), terms)])
        self.assertEqual(len(groups), report.MAX_MEMORY_GROUPS)
        self.assertEqual([g[1] for g in groups[:-1]], [f"t{i}" for i in range(5, 12)])
        self.assertEqual(groups[-1][1:], ("other 5 terms", 0.0 + 1 + 2 + 3 + 4, 5))

    def test_empty_lists_are_no_group(self):
        plan = plan_json("qwen3-30b-a3b")  # no workload: gpu_workload has no terms
        gpu = report.memory_groups(bar_lists(plan, lambda g: g.startswith("gpu_")))
        self.assertNotIn("gpu_workload_gib", [g[0] for g in gpu])
        self.assertTrue(all(g[3] > 0 for g in gpu))


if __name__ == "__main__":
    unittest.main()
