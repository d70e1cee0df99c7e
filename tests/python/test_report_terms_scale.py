"""The reports at any scale and from the plan's own table of terms (issue 37 item 2, issue 33
items 16-17): report.md's terms come from plan.json's `terms` (training_hidden_s included),
past MAX_RANK_BARS ranks the owner plot draws quantiles, and a sampled sweep says so."""
import json
import subprocess
import sys
import unittest

from testenv import BIN, path

sys.path.insert(0, path("reports"))
import report  # noqa: E402
import report_markdown  # noqa: E402


def plan_json(*flags):
    out = subprocess.run([BIN, "plan", "--model", "tiny-moe", "--json", *flags],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


class TermsTable(unittest.TestCase):
    def test_every_breakdown_list_is_in_the_table_and_in_report_md(self):
        plan = plan_json("--tokens-per-step", "65536", "--seq-len", "4096")
        keys = [g["key"] for g in plan["terms"]]
        # gpu_peak is where the simulated allocator peaked (names and live blocks), not a list
        # of terms of a sum.
        lists = set(plan["predicted"]["breakdown"]) - {"gpu_peak"}
        self.assertIn("gpu_peak", plan["predicted"]["breakdown"])
        self.assertEqual(sorted(keys), sorted(lists))
        self.assertIn("training_hidden_s", keys)
        lines = report_markdown.md_terms({"chosen": plan})
        for g in plan["terms"]:
            for t in plan["predicted"]["breakdown"][g["key"]]:
                row = [l for l in lines if l.startswith(f"| {g['label']} | `{t['name']}` |")]
                self.assertEqual(len(row), 1, (g, t["name"]))
        hidden = plan["predicted"]["breakdown"]["training_hidden_s"]
        self.assertTrue(hidden, "tiny-moe with a workload hides some work under compute")


class RankProfile(unittest.TestCase):
    def test_few_ranks_one_value_each_sorted(self):
        values, quantiles = report.rank_profile([3.0, 1.0, 2.0])
        self.assertEqual((values, quantiles), ([3.0, 2.0, 1.0], False))

    def test_many_ranks_quantiles_with_max_and_min(self):
        n = 131072  # kimi-k2 at 16384 nodes of 8 GPUs
        values, quantiles = report.rank_profile([float(i) for i in range(n)])
        self.assertTrue(quantiles)
        self.assertEqual(len(values), report.MAX_RANK_BARS)
        self.assertEqual(values[0], n - 1)
        self.assertEqual(values[-1], 0.0)
        self.assertEqual(values, sorted(values, reverse=True))
        # The median quantile sits at the middle rank (nearest rank, within one step).
        mid = values[(report.MAX_RANK_BARS - 1) // 2]
        self.assertLess(abs(mid - (n - 1) / 2), n / report.MAX_RANK_BARS)


class CoincidingLevels(unittest.TestCase):
    def test_equal_levels_are_one_line_and_the_total_takes_its_own(self):
        levels = [(120.81, "allocated"), (120.84, "reserved")]
        self.assertEqual(report.coinciding(levels, 123.7), [(120.81, "allocated = reserved")])
        self.assertEqual(report.coinciding(levels, 120.8), [])
        self.assertEqual(report.coinciding([(43.2, "allocated"), (58.4, "reserved")], 70.6),
                         [(43.2, "allocated"), (58.4, "reserved")])


class SampledSweep(unittest.TestCase):
    def data(self, asked, swept):
        return {"inputs": {"node_counts": asked}, "sweep_node_counts": swept, "sweep": [],
                "offload_modes": ["none"], "optimizer_variants": ["muon"]}

    def test_a_sample_says_how_many_of_how_many(self):
        lines = report_markdown.md_sweep(self.data(list(range(1, 301)), [1, 150, 300]))
        said = [l for l in lines if l.startswith("The sweep is sampled")]
        self.assertEqual(len(said), 1)
        self.assertIn("3 of the 300 node counts asked (1 to 300)", said[0])
        self.assertEqual(len([l for l in lines if l.startswith("| 150 |")]), 1)

    def test_a_whole_sweep_says_nothing(self):
        lines = report_markdown.md_sweep(self.data([1, 2], [1, 2]))
        self.assertFalse([l for l in lines if "sampled" in l])


if __name__ == "__main__":
    unittest.main()
