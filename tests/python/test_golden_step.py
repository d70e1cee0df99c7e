"""The executor against the frozen golden steps (tests/data/golden/muon_adamw_steps.json):
figures an independent numpy implementation wrote once (tools/golden_step.py), so an error in
the formulas the executor and its reference step share (optimizer_formulas.h) would show here.
Each case is planned with the flags the file records, run for its steps on the CPU backend,
and its checkpoint compared with the file within the tolerances the file states."""
import json
import os
import subprocess
import tempfile
import unittest

import numpy as np

import muonplan
from testenv import BIN, ENV, ROOT, path

GOLDEN = path("tests/data/golden/muon_adamw_steps.json")


def load_golden_tool():
    """tools/golden_step.py as a module: its initial values are the golden side's."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("golden_step", path("tools/golden_step.py"))
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool


GOLDEN_TOOL = load_golden_tool()


def bf16_ulp(x):
    """One bf16 ulp at |x| (8 significant bits)."""
    e = np.floor(np.log2(np.maximum(np.abs(x), 1e-30)))
    return 2.0 ** (e - 7)


class GoldenStep(unittest.TestCase):
    def run_case(self, case, work):
        plan = os.path.join(work, case["name"] + ".json")
        flags = case["plan_flags"]
        subprocess.run([BIN, "plan", *flags, "--out", plan], check=True, cwd=ROOT,
                       stdout=subprocess.DEVNULL)
        ck = os.path.join(work, case["name"] + "-ck")
        env = dict(ENV, OMPI_MCA_ess_singleton_isolated="1")
        r = subprocess.run([BIN, "execute", "--plan", plan, "--steps", str(case["steps"]),
                            "--checkpoint", ck], capture_output=True, text=True, env=env, cwd=ROOT)
        self.assertEqual(r.returncode, 0, r.stderr)
        return muonplan.read_checkpoint(ck)

    def check_tensor(self, name, want, tensors):
        got = {f: tensors[name + "/" + f].reshape(-1) for f in ("param", "momentum", "variance")
               if name + "/" + f in tensors}
        param = np.array(want["param"], np.float64)
        head = got["param"][:param.size].astype(np.float64)
        momentum = np.array(want["momentum"], np.float64)
        m = got["momentum"][:momentum.size].astype(np.float64)
        if want["rule"] == "adamw":
            np.testing.assert_allclose(head, param, rtol=1e-5, atol=0, err_msg=name + "/param")
            np.testing.assert_allclose(m, momentum, rtol=1e-5, atol=0, err_msg=name + "/momentum")
            v = got["variance"][:len(want["variance"])].astype(np.float64)
            np.testing.assert_allclose(v, want["variance"], rtol=1e-5, atol=0,
                                       err_msg=name + "/variance")
            return
        n = got["param"].size
        update_rms = want["update_l2"] / np.sqrt(n)
        worst = np.max(np.abs(head - param)) / update_rms
        self.assertLessEqual(worst, 0.05, f"{name}/param: {worst:.3f} x the update's RMS")
        self.assertLessEqual(np.max(np.abs(m - momentum) - bf16_ulp(momentum)), 0,
                             name + "/momentum: more than one bf16 ulp")

    def test_golden_steps(self):
        with open(GOLDEN) as f:
            golden = json.load(f)
        self.assertEqual(len(golden["cases"]), 2)
        with tempfile.TemporaryDirectory() as work:
            for case in golden["cases"]:
                with self.subTest(case=case["name"]):
                    ck = self.run_case(case, work)
                    self.assertEqual(ck["step"], case["steps"])
                    self.assertEqual(sorted(case["tensors"]),
                                     sorted({k.rsplit("/", 1)[0] for k in ck["tensors"]}))
                    for name, want in case["tensors"].items():
                        self.check_tensor(name, want, ck["tensors"])
                    self.check_update_norms(case, ck["tensors"])

    def check_update_norms(self, case, tensors):
        # The whole update of each Muon tensor, from its initial values (init.cc's stream, which
        # the golden file's first case shares): within 1% of the golden L2 norm.
        for name, want in case["tensors"].items():
            if want["rule"] != "muon":
                continue
            w = tensors[name + "/param"].reshape(-1).astype(np.float64)
            start = self.initial(name, w.size)
            l2 = np.linalg.norm(w - start)
            self.assertLess(abs(l2 / want["update_l2"] - 1), 0.01, f"{name}: update L2 {l2}")

    @staticmethod
    def initial(name, n):
        return GOLDEN_TOOL.init_param(name, n).astype(np.float64)

if __name__ == "__main__":
    unittest.main()
