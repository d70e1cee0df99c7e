"""Path strings and the checkpoint step bound in the bindings (docs/reliability.md; the third
round of hostile inputs found them): path strings holding a NUL or a lone surrogate are InputErrors naming the argument; write_checkpoint bounds the step,
and a resume whose steps would pass that bound is refused. ctest sets PYTHONPATH and what
testenv.py reads (tests/CMakeLists.txt)."""
import os
import subprocess
import tempfile
import unittest

import muonplan

from testenv import BIN, ENV, path

MODEL = path("tests/data/micro-dense.yaml")
TOPO = path("topologies/cpu-ci.yaml")


class PathStrings(unittest.TestCase):
    def check(self, arg, call):
        with self.assertRaises(muonplan.InputError) as e:
            call()
        self.assertTrue(str(e.exception).startswith(arg + ": "), str(e.exception))

    def test_nul_in_a_path(self):
        self.check("model", lambda: muonplan.plan(MODEL + "\x00junk", TOPO))
        self.check("topology", lambda: muonplan.plan(MODEL, TOPO + "\x00"))
        self.check("dir", lambda: muonplan.read_checkpoint("ck\x00x"))

    def test_lone_surrogate(self):
        self.check("model", lambda: muonplan.plan("\ud800.yaml", TOPO))
        self.check("plan", lambda: muonplan.write_checkpoint("ck", {}, 1, "\udc80.json"))
        self.check("layout", lambda: muonplan.plan(MODEL, TOPO, layout="fsdp=\ud800"))


class StepBound(unittest.TestCase):
    def test_write_and_resume_at_the_bound(self):
        plan = muonplan.plan(MODEL, TOPO, nodes=1, gpus_per_node=1, offload="none")
        with tempfile.TemporaryDirectory() as work:
            plan_path = os.path.join(work, "p.json")
            with open(plan_path, "w") as f:
                import json
                json.dump(plan, f)
            env = dict(ENV, OMPI_MCA_ess_singleton_isolated="1")
            ck = os.path.join(work, "ck")
            r = subprocess.run([BIN, "execute", "--plan", plan_path, "--checkpoint", ck],
                               capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            tensors = muonplan.read_checkpoint(ck)["tensors"]
            for step in (2**63 - 2, 10**15 + 1, -1):
                with self.assertRaises(ValueError) as e:
                    muonplan.write_checkpoint(os.path.join(work, "big"), tensors, step, plan)
                self.assertEqual(str(e.exception),
                                 f"step: expected an integer in [0, 10^15], got {step}")
            self.assertFalse(os.path.exists(os.path.join(work, "big")))
            top = os.path.join(work, "top")
            muonplan.write_checkpoint(top, tensors, 10**15, plan)
            r = subprocess.run([BIN, "execute", "--plan", plan_path, "--resume", top],
                               capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertEqual(r.stderr, "muonplan: rank 0: --steps: 1 steps after step "
                             "1000000000000000 end past the steps a checkpoint may hold: the last "
                             "step: expected an integer in [0, 10^15], got 1000000000000001\n")


if __name__ == "__main__":
    unittest.main()
