"""muonplan.plan(trainer_config=...) against `muonplan plan --trainer-config`: the same plan and
answer as the CLI, the model from the file's [model] name or from model=, and the CLI's
one-line errors."""
import json
import os
import subprocess
import tempfile
import unittest

os.environ["HF_HUB_CACHE"] = tempfile.mkdtemp()  # no real cache: the bundled hf_id resolves
import muonplan  # noqa: E402

from testenv import BIN, ROOT, path  # noqa: E402

RL = path("tests/data/prime-rl/rl-defaults.toml")


def cli_json(*args):
    r = subprocess.run([BIN, "plan", *args, "--json"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


class TrainerConfig(unittest.TestCase):
    def test_same_as_cli(self):
        got = muonplan.plan(trainer_config=RL)
        want = cli_json("--trainer-config", RL)
        self.assertEqual(got, want)
        self.assertEqual(got["trainer_config"]["model_found_by"], "bundled hf_id")
        self.assertEqual((got["offload"], got["optimizer"]), ("optimizer", "adamw"))

    def test_model_and_flags_override(self):
        got = muonplan.plan("qwen3-30b-a3b", trainer_config=RL, nodes=2)
        self.assertEqual(got["nodes"], 2)
        self.assertEqual(got["model"], "qwen3-30b-a3b")
        self.assertIn("--nodes 2 overrides", " ".join(got["trainer_config"]["overrides"]))

    def test_prime_rl_version(self):
        got = muonplan.plan(trainer_config=RL, prime_rl_version="2026-06-01")
        want = cli_json("--trainer-config", RL, "--prime-rl-version", "2026-06-01")
        self.assertEqual(got, want)
        self.assertEqual((got["offload"], got["layout"]["ep"]), ("none", 1))
        with self.assertRaises(muonplan.InputError):
            muonplan.plan(trainer_config=RL, prime_rl_version="main")

    def test_error_is_the_cli_line(self):
        with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
            f.write('[model]\nname = "Qwen/Qwen3-8B"\ncp = 3\n[data]\nseq_len = 1000\n')
        with self.assertRaises(muonplan.InputError) as ctx:
            muonplan.plan(trainer_config=f.name)
        r = subprocess.run([BIN, "plan", "--trainer-config", f.name], capture_output=True,
                           text=True, cwd=ROOT)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(str(ctx.exception), r.stderr.strip())
        os.unlink(f.name)



def cli_emit(*args):
    r = subprocess.run([BIN, "plan", *args], capture_output=True, text=True, cwd=ROOT)
    return r.returncode, r.stdout


class Emit(unittest.TestCase):
    """plan(emit=...) returns the text `muonplan plan --emit` prints (issue 50 item 9)."""

    def test_over_a_trainer_config(self):
        for form in ("prime-rl", "prime-rl-diff"):
            got = muonplan.plan(trainer_config=RL, nodes=2, emit=form)
            rc, want = cli_emit("--trainer-config", RL, "--nodes", "2", "--emit", form)
            self.assertEqual(rc, 0)
            self.assertEqual(got, want, form)
            self.assertIn("num_train_nodes = 2", got)

    def test_from_flags(self):
        flags = ["--nodes", "1", "--offload", "none", "--tokens-per-step", "65536",
                 "--seq-len", "4096"]
        got = muonplan.plan("qwen3-8b", nodes=1, offload="none", tokens_per_step=65536,
                            seq_len=4096, emit="prime-rl")
        rc, want = cli_emit("--model", "qwen3-8b", *flags, "--emit", "prime-rl")
        self.assertEqual((rc, got), (0, want))
        self.assertIn('name = "Qwen/Qwen3-8B"', got)

    def test_no_fit_needs_force(self):
        with self.assertRaisesRegex(muonplan.InputError, "^emit: the plan does not fit.*force=True"):
            muonplan.plan("kimi-k2", nodes=1, offload="none", emit="prime-rl")
        rc, want = cli_emit("--model", "kimi-k2", "--nodes", "1", "--offload", "none", "--emit",
                            "prime-rl")
        self.assertEqual((rc, want), (3, ""))  # the CLI's exit 3: nothing written
        got = muonplan.plan("kimi-k2", nodes=1, offload="none", emit="prime-rl", force=True)
        self.assertIn("[model]", got)

    def test_wrong_values(self):
        with self.assertRaisesRegex(TypeError, "emit: expected str or None, got int 3"):
            muonplan.plan("qwen3-8b", emit=3)
        with self.assertRaisesRegex(TypeError, "force: expected bool"):
            muonplan.plan("qwen3-8b", emit="prime-rl", force=1)
        with self.assertRaisesRegex(muonplan.InputError, "^emit: expected prime-rl, prime-rl-diff or"):
            muonplan.plan("qwen3-8b", emit="yaml")


if __name__ == "__main__":
    unittest.main()
