"""report.md's candidate table (reports/report_markdown.py): one row per candidate with its
layout, "(chosen)" on exactly one row and never on one that does not fit."""
import os
import sys
import unittest

from testenv import path

sys.path.insert(0, path("reports"))
import report_markdown  # noqa: E402


def cand(nodes, offload, layout, fits, peak):
    return {"nodes": nodes, "offload": offload, "layout": layout, "fits": fits,
            "gpu_peak_gib": peak, "host_ram_per_node_gib": 10.0, "step_s": 1.0,
            "gpu_seconds": 8.0 * nodes}


def data(chosen_layout, fits, candidates, nodes=1, offload="full"):
    f, c, e = (int(x.split("=")[1]) for x in chosen_layout.split(","))
    chosen = {"nodes": nodes, "gpus_per_node": 8, "world_size": 8 * nodes,
              "layout": {"fsdp": f, "cp": c, "ep": e}, "offload": offload,
              "optimizer": "muon", "fits": fits,
              "decision": {"reason": "r", "candidates": candidates}}
    return {"chosen": chosen, "inputs": {"node_counts": [1, 2]}}


def table_rows(lines):
    return [l for l in lines if l.startswith("| ") and not l.startswith(("| nodes", "| ---"))]


class CandidateTable(unittest.TestCase):
    def test_tied_layouts_one_row_each_chosen_once(self):
        # Four ep layouts of one node count and mode with equal figures (glm-4.5-air), and a
        # candidate that does not fit in the chosen's node count and mode.
        cands = [cand(1, "full", f"fsdp=8,cp=1,ep={e}", True, 100.0) for e in (1, 2, 4, 8)]
        cands.append(cand(1, "none", "fsdp=8,cp=1,ep=1", False, 300.0))
        rows = table_rows(report_markdown.md_decision(data("fsdp=8,cp=1,ep=1", True, cands)))
        self.assertEqual(len(rows), 5)
        self.assertEqual(len({r.split("|")[2] + r.split("|")[3] for r in rows}), 5, rows)
        chosen = [r for r in rows if "(chosen)" in r]
        self.assertEqual(len(chosen), 1, rows)
        self.assertIn("| fsdp=8,cp=1,ep=1 | full **(chosen)** | yes |", chosen[0])

    def test_no_chosen_mark_on_a_row_that_does_not_fit(self):
        cands = [cand(1, "full", "fsdp=8,cp=1,ep=1", False, 300.0),
                 cand(1, "none", "fsdp=8,cp=1,ep=1", False, 400.0)]
        rows = table_rows(report_markdown.md_decision(data("fsdp=8,cp=1,ep=1", False, cands)))
        self.assertFalse([r for r in rows if "(chosen)" in r], rows)
        self.assertEqual(len([r for r in rows if "(closest)" in r]), 1, rows)


if __name__ == "__main__":
    unittest.main()
