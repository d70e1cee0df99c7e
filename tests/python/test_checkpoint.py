"""muonplan.read_checkpoint and muonplan.write_checkpoint against the executor: checkpoints of
one state written by 4 and by 2 ranks read back equal; whole tensors written for another plan
resume bit-identically; bad tensors are refused naming the key; the round-trip example runs.
ctest sets PYTHONPATH and what testenv.py reads (tests/CMakeLists.txt)."""
import json
import os
import tempfile
import unittest

import numpy as np

import muonplan

from testenv import BIN, ROOT, mpiexec, run_example


def plan_file(work, name, ranks, **options):
    """tiny-moe planned for `ranks` CPU ranks, written to WORK/NAME.json."""
    options.setdefault("offload", "none")
    plan = muonplan.plan(os.path.join(ROOT, "models/tiny-moe.yaml"),
                         os.path.join(ROOT, "topologies/cpu-ci.yaml"), nodes=1,
                         gpus_per_node=ranks, **options)
    path = os.path.join(work, name + ".json")
    with open(path, "w") as f:
        json.dump(plan, f)
    return path


def execute(ranks, plan, *args):
    """Runs `muonplan execute` on `ranks` MPI ranks; returns the metrics."""
    r = mpiexec(ranks, BIN, "execute", "--plan", plan, "--json", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


class Checkpoints(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        w = cls.work = cls.tmp.name
        cls.p4 = plan_file(w, "p4", 4)
        cls.p2 = plan_file(w, "p2", 2, layout="fsdp=1")  # every non-expert tensor replicated
        execute(4, cls.p4, "--steps", "1", "--checkpoint", os.path.join(w, "ck4"))
        execute(2, cls.p2, "--steps", "1", "--checkpoint", os.path.join(w, "ck2"))
        cls.ck4 = muonplan.read_checkpoint(os.path.join(w, "ck4"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_4_and_2_ranks_read_equal(self):
        # One step is bit-exact on any world size, so the two checkpoints hold one state.
        ck2 = muonplan.read_checkpoint(os.path.join(self.work, "ck2"))
        self.assertEqual(self.ck4["step"], 1)
        self.assertEqual(ck2["step"], 1)
        self.assertEqual(list(self.ck4["tensors"]), list(ck2["tensors"]))
        with open(self.p4) as f:
            plan = json.load(f)
        shapes = {t["name"]: t["shape"] for t in plan["tensors"]}
        for name, a in self.ck4["tensors"].items():
            tensor, field = name.rsplit("/", 1)
            self.assertEqual(list(a.shape), shapes[tensor], name)
            self.assertEqual(a.dtype, np.float32, name)
            self.assertTrue(np.array_equal(a, ck2["tensors"][name]), name)
        # Every tensor has param and momentum, AdamW ones variance; one step moved them all.
        adamw = [t["name"] for t in plan["tensors"] if t["rule"] == "adamw"]
        self.assertEqual(len(self.ck4["tensors"]), 2 * len(shapes) + len(adamw))
        for t in adamw:
            self.assertTrue(np.all(self.ck4["tensors"][t + "/variance"] > 0), t)

    def test_written_for_another_plan_resumes_bit_identically(self):
        # The 4-rank state, read whole and written for a plan of fsdp=2,ep=2 with optimizer
        # offload, continues exactly like the uninterrupted 4-rank run.
        w = self.work
        p4ep = plan_file(w, "p4ep", 4, layout="fsdp=2,ep=2", offload="optimizer")
        muonplan.write_checkpoint(os.path.join(w, "written"), self.ck4["tensors"], 1, p4ep)
        self.assertEqual(muonplan.read_checkpoint(os.path.join(w, "written"))["step"], 1)
        two = execute(4, self.p4, "--steps", "2")
        resumed = execute(4, p4ep, "--steps", "1", "--resume", os.path.join(w, "written"))
        self.assertEqual(resumed["first_step"], 2)
        self.assertEqual(resumed["measured"]["state_digest"], two["measured"]["state_digest"])

    def test_bf16_momentum_is_widened_exactly(self):
        w = self.work
        pbf = plan_file(w, "pbf", 2, bf16_momentum=True)
        muonplan.write_checkpoint(os.path.join(w, "bf"), self.ck4["tensors"], 1, pbf)
        bf = muonplan.read_checkpoint(os.path.join(w, "bf"))
        name = "model.layers.1.self_attn.o_proj.weight/momentum"  # a Muon tensor
        m32 = self.ck4["tensors"][name]
        # Round to nearest even on the float32 bits, by hand.
        bits = m32.view(np.uint32).astype(np.uint64)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16).astype(np.uint32)
        self.assertTrue(np.array_equal(bf["tensors"][name].view(np.uint32), rounded))
        self.assertFalse(np.array_equal(bf["tensors"][name], m32))
        # AdamW momentum stays float32.
        adam = "model.embed_tokens.weight/momentum"
        self.assertTrue(np.array_equal(bf["tensors"][adam], self.ck4["tensors"][adam]))

    def test_bad_tensors_are_refused(self):
        w = self.work
        t = dict(self.ck4["tensors"])
        name = "model.embed_tokens.weight/param"
        with self.assertRaisesRegex(ValueError, "^model.embed_tokens.weight/param: missing$"):
            muonplan.write_checkpoint(os.path.join(w, "bad"),
                                      {k: v for k, v in t.items() if k != name}, 0, self.p2)
        with self.assertRaisesRegex(ValueError, r"^model.embed_tokens.weight/param: shape "
                                    r"\[3,4\], the plan's tensor is \[1000,250\]$"):
            muonplan.write_checkpoint(os.path.join(w, "bad"), {**t, name: np.zeros((3, 4))}, 0,
                                      self.p2)
        with self.assertRaisesRegex(ValueError, "^nope/param: not <tensor>/param"):
            muonplan.write_checkpoint(os.path.join(w, "bad"), {**t, "nope/param": 0}, 0, self.p2)
        self.assertFalse(os.path.exists(os.path.join(w, "bad")))
        # A directory of someone else's is not overwritten.
        os.makedirs(os.path.join(w, "mine"))
        open(os.path.join(w, "mine", "notes.txt"), "w").close()
        with self.assertRaisesRegex(muonplan.InputError, "mine: --checkpoint: holds notes.txt"):
            muonplan.write_checkpoint(os.path.join(w, "mine"), t, 0, self.p2)
        with self.assertRaisesRegex(muonplan.InputError, "manifest.json: file: cannot be read"):
            muonplan.read_checkpoint(os.path.join(w, "mine"))


class Example(unittest.TestCase):
    def test_roundtrip_example_runs(self):
        with tempfile.TemporaryDirectory() as out:
            r = run_example("checkpoint_roundtrip.py", "--muonplan", BIN, "--out", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            # What it wrote, read back here: the seeded weights at step 0, and after one step
            # every parameter moved by a finite amount, the Muon matrices by lr x update_rms.
            start, after = (muonplan.read_checkpoint(os.path.join(out, d))
                            for d in ("start", "after"))
            plan = json.load(open(os.path.join(out, "plan-1rank.json")))
            rng = np.random.default_rng(0)
            self.assertEqual((start["step"], after["step"]), (0, 1))
            self.assertEqual(len(plan["tensors"]), 43)
            hyper = plan["optimizer_config"]
            for t in plan["tensors"]:
                name = t["name"] + "/param"
                w0 = (0.02 * rng.standard_normal(t["shape"])).astype(np.float32)
                np.testing.assert_array_equal(start["tensors"][name], w0)
                delta = after["tensors"][name] - w0
                self.assertTrue(np.all(np.isfinite(delta)) and np.any(delta != 0), name)
            name = "model.layers.0.self_attn.qkv_proj.weight/param"
            w0 = start["tensors"][name]
            step = after["tensors"][name] - w0 * np.float32(1 - hyper["lr"] * hyper["weight_decay"])
            rms = float(np.sqrt(np.mean(step.astype(np.float64) ** 2)))
            self.assertAlmostEqual(rms / (hyper["lr"] * hyper["update_rms"]), 1.0, delta=0.05)


if __name__ == "__main__":
    unittest.main()
