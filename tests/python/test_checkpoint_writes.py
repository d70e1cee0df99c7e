"""What write_checkpoint stores and where (docs/reliability.md, round 4): it refuses, naming the
tensor, every value `execute --resume` would call damaged (NaN, a float64 infinite in float32,
a negative AdamW variance) and arrays that are not real numbers (objects, complex), by the
resume's own rule; and no Python output (a checkpoint, a report) goes inside a checkpoint,
through a dangling link or not. ctest sets PYTHONPATH and what testenv.py reads."""
import json
import os
import subprocess
import tempfile
import unittest

import numpy as np

import muonplan

from testenv import BIN, ENV, path

MODEL = path("tests/data/micro-dense.yaml")
TOPO = path("topologies/cpu-ci.yaml")


class CheckpointWrites(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.work = cls.tmp.name
        cls.plan = muonplan.plan(MODEL, TOPO, nodes=1, gpus_per_node=1, offload="none")
        cls.plan_path = os.path.join(cls.work, "p.json")
        with open(cls.plan_path, "w") as f:
            json.dump(cls.plan, f)
        cls.env = dict(ENV, OMPI_MCA_ess_singleton_isolated="1")
        cls.ck = os.path.join(cls.work, "ck")
        r = subprocess.run([BIN, "execute", "--plan", cls.plan_path, "--checkpoint", cls.ck],
                           capture_output=True, text=True, env=cls.env)
        assert r.returncode == 0, r.stderr
        cls.tensors = muonplan.read_checkpoint(cls.ck)["tensors"]
        cls.ck_files = sorted(os.listdir(cls.ck))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def refused(self, name, value, words):
        tensors = dict(self.tensors, **{name: value})
        out = os.path.join(self.work, "bad")
        with self.assertRaises(ValueError) as e:
            muonplan.write_checkpoint(out, tensors, 1, self.plan)
        self.assertTrue(str(e.exception).startswith(name + ": "), str(e.exception))
        self.assertIn(words, str(e.exception))
        self.assertFalse(os.path.exists(out), "a refused write left " + out)

    def param(self):
        return next(k for k in self.tensors if k.endswith("/param"))

    def test_values_resume_calls_damaged(self):
        name = self.param()
        a = np.array(self.tensors[name], dtype=np.float64)
        nan = a.copy()
        nan.flat[3] = np.nan
        self.refused(name, nan, "holds nan at element 3; a checkpoint holds only finite values")
        big = a.copy()
        big.flat[0] = 1e300  # finite in float64, infinite in float32
        with np.errstate(over="ignore"):  # numpy's cast warns of what is checked here
            self.refused(name, big, "holds inf at element 0; a checkpoint holds only finite values")
        var = next(k for k in self.tensors if k.endswith("/variance"))
        neg = np.zeros_like(self.tensors[var])
        neg.flat[-1] = -1e-3
        self.refused(var, neg, "holds -0.001 at element %d; an AdamW variance is >= 0"
                     % (neg.size - 1))

    def test_arrays_that_are_not_real_numbers(self):
        name = self.param()
        shape = self.tensors[name].shape
        self.refused(name, np.full(shape, None, dtype=object), "an array of dtype object")
        self.refused(name, np.ones(shape, dtype=np.complex64) * 1j, "an array of dtype complex64")

    def test_good_values_still_written(self):
        out = os.path.join(self.work, "good")
        muonplan.write_checkpoint(out, self.tensors, 1, self.plan)
        back = muonplan.read_checkpoint(out)["tensors"]
        name = self.param()
        self.assertTrue(np.array_equal(back[name], self.tensors[name]))

    def test_no_output_inside_a_checkpoint(self):
        link = os.path.join(self.work, "dangling")
        os.symlink("ck/sub", link)
        for target in (os.path.join(self.ck, "sub"), link):
            with self.assertRaises(muonplan.InputError) as e:
                muonplan.write_checkpoint(target, self.tensors, 1, self.plan)
            self.assertIn("is inside a muonplan checkpoint directory (%s)" % self.ck,
                          str(e.exception))
        with self.assertRaises(muonplan.InputError) as e:
            muonplan.report(path("models/tiny-dense.yaml"), os.path.join(self.ck, "rep"),
                            nodes=[1])
        self.assertIn("is inside a muonplan checkpoint directory (%s)" % self.ck,
                      str(e.exception))
        self.assertEqual(sorted(os.listdir(self.ck)), self.ck_files)


if __name__ == "__main__":
    unittest.main()
