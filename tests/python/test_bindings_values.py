"""The bindings name what the caller gave (issue 33 items 12 and 20): a NaN or infinity in a
plan, topology or model dict is an InputError naming its key (JSON has neither; the reader used
to fail with its parser's text as a RuntimeError); 2**62 tokens per step is refused at once,
naming the micro-step count; and Ctrl-C ends a long search with KeyboardInterrupt instead of
running on to the end (the search checks for signals between candidates); LoRA targets given
as bytes, None or [] are refused, and targets that match nothing adapt nothing (issue 46); values
are checked by their Python type before they become flag text, and every exception class says
what it is (issue 50 item 9). ctest sets
PYTHONPATH and what testenv.py reads (tests/CMakeLists.txt)."""
import os
import signal
import subprocess
import sys
import tempfile
import unittest

import muonplan

from testenv import ENV, path

TOPO = path("topologies/cpu-ci.yaml")


class NonFiniteInDicts(unittest.TestCase):
    def test_plan_dict(self):
        p = muonplan.plan(model="tiny-moe", topology=TOPO, nodes=1)
        p["optimizer_config"]["lr"] = float("nan")
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(muonplan.InputError) as e:
                muonplan.write_checkpoint(os.path.join(d, "ck"), {}, 1, p)
        self.assertEqual(str(e.exception), "<plan dict>: optimizer_config.lr: must be a finite "
                         "number (JSON has no NaN or infinity), got nan")

    def test_model_dict_list_item(self):
        model = {"name": "m", "hidden_size": 64, "layers": [1.0, float("inf")]}
        with self.assertRaises(muonplan.InputError) as e:
            muonplan.plan(model=model, topology=TOPO, nodes=1)
        self.assertEqual(str(e.exception), "<model dict>: layers[1]: must be a finite number "
                         "(JSON has no NaN or infinity), got inf")


class Bounded(unittest.TestCase):
    def test_2_pow_62_tokens(self):
        with self.assertRaises(muonplan.InputError) as e:
            muonplan.plan(model="tiny-moe", topology=TOPO, nodes=1, tokens_per_step=2**62,
                          seq_len=1, offload="full")
        self.assertIn("micro steps per step", str(e.exception))
        self.assertIn("more than muonplan plans for (65536)", str(e.exception))


CHILD = r"""
import muonplan, sys
print("calling", flush=True)
try:
    muonplan.plan(model="deepseek-v3", topology=sys.argv[1], nodes="auto", max_nodes=4096,
                  max_predictions=100000,
                  tokens_per_step=2**26, seq_len=2**20, layout="auto", gpu_memory_gib=40)
    print("returned", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def cpu_s(pid):
    """The process's CPU seconds so far (user + system, /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CtrlC(unittest.TestCase):
    def test_interrupts_a_search(self):
        # The search (237 candidates, 12 ms each) costs about 3 CPU seconds uninterrupted. One
        # SIGINT once the child has spent 0.5 CPU seconds past "calling" (inside the search, not
        # before it). Without the check between candidates the search ran on to its end first:
        # the child's CPU time at exit says which, not a clock.
        # h200-ib with room for 4096 nodes: --max-nodes above the topology's is refused.
        topo = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
        with open(path("topologies/h200-ib.yaml")) as f:
            text = f.read()
        assert "\nmax_nodes: 64\n" in text
        topo.write(text.replace("\nmax_nodes: 64\n", "\nmax_nodes: 4096\n"))
        topo.close()
        self.addCleanup(os.unlink, topo.name)
        child = subprocess.Popen([sys.executable, "-c", CHILD, topo.name], env=ENV,
                                 stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(child.stdout.readline(), "calling\n")
            start = cpu_s(child.pid)
            while cpu_s(child.pid) < start + 0.5:
                os.sched_yield()
            signalled = cpu_s(child.pid)
            child.send_signal(signal.SIGINT)
            last = signalled
            while child.poll() is None:  # the CPU time just before it exits
                try:
                    last = cpu_s(child.pid)
                except (FileNotFoundError, ProcessLookupError):
                    break
                os.sched_yield()
            child.wait(timeout=120)  # a hang guard only
        finally:
            if child.poll() is None:
                child.kill()
        self.assertEqual(child.stdout.read(), "interrupted\n")
        self.assertEqual(child.returncode, 0)
        self.assertLess(last - signalled, 1.0, "the search ran on after SIGINT")


class LoraTargets(unittest.TestCase):
    """Targets that match no module adapt nothing (issue 46 item 12): str() made b"q_proj" the
    module "b'q_proj'" and [None] the module "None", a plan of 0 tensors that "fits"."""
    ARGS = dict(model="tiny-dense", topology=TOPO, nodes=1, gpus_per_node=1, optimizer="adamw",
                lora_rank=4)

    def refused(self, targets):
        with self.assertRaises(muonplan.InputError) as e:
            muonplan.plan(lora_targets=targets, **self.ARGS)
        return str(e.exception)

    def test_none_in_list(self):
        self.assertEqual(self.refused([None]), "lora_targets: None inside a list (None means "
                         "not given only as the whole value)")

    def test_bytes(self):
        self.assertEqual(self.refused(b"q_proj"), "lora_targets: expected str, got bytes "
                         "(decode it first)")
        self.assertEqual(self.refused(["q_proj", b"v_proj"]), "lora_targets: expected str, got "
                         "bytes (decode it first)")

    def test_empty_list(self):
        self.assertEqual(self.refused([]), "lora_targets: an empty list; leave the keyword out "
                         "(or None) for the default")

    def test_adapts_nothing(self):
        self.assertTrue(self.refused(["Q_PROJ"]).startswith(
            "lora_targets: 'Q_PROJ' adapts nothing: no linear module of the model"))

    def test_matching_targets_plan(self):
        p = muonplan.plan(lora_targets=["q_proj", "v_proj"], **self.ARGS)
        self.assertEqual(p["lora"]["target_modules"], ["q_proj", "v_proj"])
        self.assertGreater(len(p["tensors"]), 0)


if __name__ == "__main__":
    unittest.main()


class TypedKeywords(unittest.TestCase):
    """A keyword's value is checked by its Python type, naming the keyword: True was the flag
    text "true" (refused as a node count, "got 'true'") and "0.01" the number 0.01."""

    def refused(self, fn=None, **options):
        with self.assertRaises(TypeError) as e:
            (fn or muonplan.plan)("tiny-moe", topology=TOPO, **options)
        return str(e.exception)

    def test_wrong_types(self):
        self.assertEqual(self.refused(nodes=True), "plan(): nodes: expected int or str, got bool True")
        self.assertEqual(self.refused(nodes=1, lr="0.01"),
                         "plan(): lr: expected float, got str '0.01'")
        self.assertEqual(self.refused(nodes=1, gpus_per_node=4.0),
                         "plan(): gpus_per_node: expected int, got float 4.0")
        self.assertEqual(self.refused(nodes=1, ac_offload=1),
                         "plan(): ac_offload: expected bool, got int 1")
        self.assertEqual(self.refused(nodes=1, momentum=False),
                         "plan(): momentum: expected float, got bool False")
        self.assertEqual(self.refused(nodes=1, optimizer=1),
                         "plan(): optimizer: expected str, got int 1")
        self.assertEqual(self.refused(nodes=1, layout=["fsdp=4"]),
                         "plan(): layout: expected str or dict, got list ['fsdp=4']")

    def test_report_nodes(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(TypeError) as e:
                muonplan.report("tiny-moe", d, TOPO, nodes=True)
        self.assertEqual(str(e.exception), "report(): nodes: expected int, str or list, got bool True")

    def test_right_types_plan_as_the_text(self):
        # An int for a float, a float for a float, a str enum: the same plan as their text.
        a = muonplan.plan("tiny-moe", topology=TOPO, nodes=1, lr=1, optimizer="muon")
        b = muonplan.plan("tiny-moe", topology=TOPO, nodes="1", lr=1.0)
        self.assertEqual(a, b)
        self.assertEqual(a["optimizer_config"]["lr"], 1.0)

    def test_enum_value_named(self):
        with self.assertRaises(muonplan.InputError) as e:
            muonplan.plan("tiny-moe", topology=TOPO, nodes=1, optimizer="sgd")
        self.assertTrue(str(e.exception).startswith("optimizer: "), str(e.exception))


class ExceptionDocs(unittest.TestCase):
    def test_every_exception_class_has_a_docstring(self):
        classes = [getattr(muonplan, n) for n in dir(muonplan)
                   if isinstance(getattr(muonplan, n), type)
                   and issubclass(getattr(muonplan, n), BaseException)]
        self.assertIn(muonplan.InputError, classes)
        for c in classes:
            with self.subTest(name=c.__name__):
                self.assertTrue(c.__doc__ and len(c.__doc__) > 40, c.__doc__)
                self.assertIsNot(c.__doc__, ValueError.__doc__)


class ReportTrainerConfig(unittest.TestCase):
    def test_report_reads_a_trainer_config(self):
        # As `muonplan report --trainer-config`: the file's model and workload, its cp and ep
        # held with FSDP over each count's GPUs (issue 50 item 7).
        with tempfile.TemporaryDirectory() as d:
            r = muonplan.report(None, os.path.join(d, "rep"), nodes=[1, 2],
                                trainer_config=path("examples/prime-rl/qwen3-30b-a3b-rl.toml"))
        data = r["data"]
        self.assertTrue(data["inputs"]["model_path"].endswith("qwen3-30b-a3b.yaml"))
        self.assertIsNotNone(data["inputs"]["workload"])
        pts = [p for p in data["sweep"] if p["evaluated"]]
        self.assertEqual({p["nodes"] for p in pts}, {1, 2})
        self.assertTrue(all(p["layout"]["ep"] == 8 and p["layout"]["fsdp"] == p["world_size"]
                            for p in pts), pts)
