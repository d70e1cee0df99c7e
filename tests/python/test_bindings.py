"""The Python module `muonplan` against the command line: same inputs, same JSON, same one-line
errors. ctest runs it with /usr/bin/python3, PYTHONPATH at the module's build directory and
MUONPLAN_BIN / MUONPLAN_SOURCE_DIR set (tests/CMakeLists.txt)."""
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import unittest

import muonplan

from testenv import BIN, ROOT, path, run_example


def cli(*args):
    """Runs the CLI; returns (exit code, stdout, stderr)."""
    r = subprocess.run([BIN, *args], capture_output=True, text=True, cwd=ROOT)
    return r.returncode, r.stdout, r.stderr.strip()


def as_keywords(message):
    """A CLI message as the bindings word it: --FLAG of a plan option as its keyword."""
    known = set(muonplan.plan_options) | {"model", "topology"}
    return re.sub(r"--([a-z0-9][a-z0-9-]*)",
                  lambda m: m.group(1).replace("-", "_")
                  if m.group(1).replace("-", "_") in known else m.group(0), message)


def cli_json(*args):
    rc, out, err = cli(*args, "--json")
    assert rc == 0, err
    return json.loads(out)


# models/tiny-moe.yaml as a dict (our spec format, not an HF config).
TINY_MOE = {
    "name": "tiny-moe", "family": "glm4_moe", "vocab_size": 1000, "hidden_size": 250,
    "num_layers": 5,
    "attention": {"type": "gqa", "num_heads": 5, "num_kv_heads": 1},
    "mlp": {"intermediate_size": 667},
    "moe": {"num_experts": 10, "experts_per_token": 2, "intermediate_size": 125,
            "num_shared_experts": 1, "first_dense_layers": 1, "router_bias": True},
    "storage": {"fused_qkv": True, "fused_gate_up": True},
}


class PlanMatchesCli(unittest.TestCase):
    def test_auto_plan(self):
        model = path("models/glm-4.5-air.yaml")
        self.assertEqual(muonplan.plan(model), cli_json("plan", "--model", model))

    def test_training_step_options(self):
        # The workload flags of the training-step model, as keyword arguments: same plan as the
        # CLI, and its named terms are there.
        model = path("models/glm-4.5-air.yaml")
        got = muonplan.plan(model, nodes=1, offload="full", layout="cp=4,ep=8",
                            tokens_per_step=1048576, seq_len=131072, ac_offload=True,
                            lm_head_chunk=1024, cp_style="ring")
        want = cli_json("plan", "--model", model, "--nodes", "1", "--offload", "full",
                        "--layout", "cp=4,ep=8", "--tokens-per-step", "1048576",
                        "--seq-len", "131072", "--ac-offload", "--lm-head-chunk", "1024",
                        "--cp-style", "ring")
        self.assertEqual(got, want)
        terms = {t["name"] for t in got["predicted"]["breakdown"]["training_step_s"]}
        self.assertTrue({"post_backward_optimizer", "exposed_cp_comm", "weight_upload"} <= terms)
        workload = {t["name"] for t in got["predicted"]["breakdown"]["gpu_workload_gib"]}
        # The timeline's kinds live at the allocated peak (a layer's backward): its reloaded
        # checkpoint among them.
        self.assertIn("checkpointed_layer_inputs", workload)
        with self.assertRaises(muonplan.InputError) as e:
            muonplan.plan(model, tokens_per_step=1048576, seq_len=131072, cp_style="spiral")
        self.assertEqual(str(e.exception), "cp_style: expected ulysses or ring, got 'spiral'")

    def test_runs_on(self):
        # --runs-on as a keyword (issue 50 item 1): prime-rl's plan is the CLI's, never full
        # offload with Muon, and the full-offload candidate names prime-rl's rule.
        model = path("models/glm-4.5-air.yaml")
        got = muonplan.plan(model, nodes=1, tokens_per_step=262144, seq_len=4096,
                            runs_on="prime-rl")
        want = cli_json("plan", "--model", model, "--nodes", "1", "--tokens-per-step", "262144",
                        "--seq-len", "4096", "--runs-on", "prime-rl")
        self.assertEqual(got, want)
        self.assertNotEqual(got["offload"], "full")
        full = [c for c in got["decision"]["candidates"] if c["offload"] == "full"]
        self.assertEqual(len(full), 1)
        self.assertIn("Muon under full offload: prime-rl", full[0]["note"])
        own = muonplan.plan(model, nodes=1, tokens_per_step=262144, seq_len=4096)
        self.assertEqual(own["offload"], "full")
        with self.assertRaises(muonplan.InputError) as e:
            muonplan.plan(model, runs_on="torch")
        self.assertEqual(str(e.exception), "runs_on: expected prime-rl or muonplan, got 'torch'")

    def test_lora_options(self):
        # LoRA's keywords are its flags: same plan, the adapters as its tensors; Muon refused.
        model = path("models/qwen3-0.6b.yaml")
        got = muonplan.plan(model, nodes=1, optimizer="adamw", lora_rank=16, lora_adapters=2,
                            lora_targets="q_proj,v_proj")
        want = cli_json("plan", "--model", model, "--nodes", "1", "--optimizer", "adamw",
                        "--lora-rank", "16", "--lora-adapters", "2",
                        "--lora-targets", "q_proj,v_proj")
        self.assertEqual(got, want)
        self.assertEqual(got["lora"]["adapters"], 2)
        self.assertEqual(len(got["tensors"]), 28 * 2 * 2 * 2)
        with self.assertRaises(muonplan.InputError) as e:
            muonplan.plan(model, nodes=1, lora_rank=16)
        self.assertTrue(str(e.exception).startswith("optimizer: Muon on LoRA adapters"))

    def test_attention_and_bundled_topology(self):
        # attention= is --attention; a topology may be a bundled name, as on the CLI.
        model = path("models/qwen3-0.6b.yaml")
        got = muonplan.plan(model, "h100-ib", nodes=1, offload="none", tokens_per_step=65536,
                            seq_len=8192, attention="fa2")
        want = cli_json("plan", "--model", model, "--topology", "h100-ib", "--nodes", "1",
                        "--offload", "none", "--tokens-per-step", "65536", "--seq-len", "8192",
                        "--attention", "fa2")
        self.assertEqual(got, want)
        self.assertEqual(got["workload"]["attention"], "fa2")
        terms = {t["name"] for t in got["predicted"]["breakdown"]["training_step_s"]}
        self.assertTrue({"gemm", "attention", "elementwise", "lm_head", "layer_fixed"} <= terms)

    def test_options_use_flag_names(self):
        model = path("models/qwen3-30b-a3b.yaml")
        got = muonplan.plan(model, path("topologies/h200-ib.yaml"), nodes=2, offload="optimizer",
                            layout="fsdp=8,ep=8", bf16_momentum=True, owners="round-robin",
                            ns_schedule="polar-express", tokens_per_step=1048576, seq_len=4096,
                            ac_offload=True, gpu_memory_gib=120, lr=0.01)
        want = cli_json("plan", "--model", model, "--topology", path("topologies/h200-ib.yaml"),
                        "--nodes", "2", "--offload", "optimizer", "--layout", "fsdp=8,ep=8",
                        "--bf16-momentum", "--owners", "round-robin",
                        "--ns-schedule", "polar-express", "--tokens-per-step", "1048576",
                        "--seq-len", "4096", "--ac-offload", "--gpu-memory-gib", "120",
                        "--lr", "0.01")
        self.assertEqual(got, want)
        self.assertEqual(got["nodes"], 2)
        self.assertTrue(got["optimizer_config"]["bf16_momentum"])

    def test_selective_ac_keywords(self):
        # --ac selective, --ac-targets and --ac-freq as keywords: the same plan as the flags.
        model = path("models/qwen3-30b-a3b.yaml")
        got = muonplan.plan(model, nodes=1, tokens_per_step=262144, seq_len=4096,
                            ac="selective", ac_targets="routed_experts,norm", ac_freq=2)
        want = cli_json("plan", "--model", model, "--nodes", "1", "--tokens-per-step", "262144",
                        "--seq-len", "4096", "--ac", "selective", "--ac-targets",
                        "routed_experts,norm", "--ac-freq", "2")
        self.assertEqual(got, want)
        self.assertEqual((got["workload"]["ac"], got["workload"]["ac_freq"]), ("selective", 2))
        self.assertEqual(got["workload"]["ac_targets"], ["routed_experts", "norm"])

    def test_hf_config_dict(self):
        hf = path("tests/data/hf/glm-4.5-air.json")
        with open(hf) as f:
            config = json.load(f)
        config["_name_or_path"] = "zai-org/glm-4.5-air"  # names the model as the file does
        self.assertEqual(muonplan.plan(config, nodes=1), cli_json("plan", "--model", hf,
                                                                  "--nodes", "1"))

    def test_spec_dict(self):
        topo = path("topologies/cpu-ci.yaml")
        want = cli_json("plan", "--model", path("models/tiny-moe.yaml"), "--topology", topo,
                        "--nodes", "1", "--gpus-per-node", "4", "--offload", "none")
        got = muonplan.plan(TINY_MOE, topo, nodes=1, gpus_per_node=4, offload="none")
        self.assertEqual(got, want)

    def test_inspect(self):
        model = path("models/kimi-k2.yaml")
        self.assertEqual(muonplan.inspect(model), cli_json("inspect", "--model", model))
        self.assertEqual(muonplan.inspect(TINY_MOE, tensors=True),
                         cli_json("inspect", "--model", path("models/tiny-moe.yaml"),
                                  "--tensors"))

    def test_cost_ns(self):
        self.assertEqual(muonplan.cost_ns(768, 2048, batch=32, ns_schedule="jordan"),
                         cli_json("cost", "ns", "--rows", "768", "--cols", "2048", "--batch",
                                  "32", "--ns-schedule", "jordan"))

    def test_plan_options_are_the_cli_flags(self):
        # One vocabulary: every plan flag of the command line is a keyword, and no other.
        r = subprocess.run([BIN, "plan", "--help"], capture_output=True, text=True)
        flags = set(re.findall(r"^\s+--([a-z0-9-]+)", r.stdout, re.M))
        # The command's outputs, not options of the plan: --emit-out writes --emit's text,
        # --force writes it for a plan that does not fit.
        not_plan_options = {"model", "topology", "json", "explain", "quiet", "emit", "emit-out",
                            "force", "out", "trace", "help"}
        self.assertEqual(sorted(muonplan.plan_options),
                         sorted(f.replace("-", "_") for f in flags - not_plan_options))


    def test_keywords_are_the_cli_flags_with_their_defaults(self):
        # help(muonplan.plan) lists every option as a keyword with the default --help shows:
        # both come from one table (issue 36 item 14).
        import inspect
        r = subprocess.run([BIN, "plan", "--help"], capture_output=True, text=True)
        shown = dict(re.findall(r"^\s+--([a-z0-9-]+) [A-Z,]+=(\S+)", r.stdout, re.M))
        params = inspect.signature(muonplan.plan).parameters
        keywords = [k for k, p in params.items() if p.kind is p.KEYWORD_ONLY]
        self.assertEqual(keywords, list(muonplan.plan_options))
        self.assertEqual(shown["lr"], "0.02")  # a worked value, not only agreement
        for flag, text in shown.items():
            with self.subTest(flag=flag):
                default = params[flag.replace("-", "_")].default
                self.assertEqual(str(default), text) if isinstance(default, str) else \
                    self.assertEqual(default, float(text))
        self.assertIn("lr: float = 0.02", muonplan.plan.__doc__)
        self.assertIn("weight_decay: float = 0.0", muonplan.plan.__doc__)
        report_keywords = set(inspect.signature(muonplan.report).parameters)
        self.assertFalse({"offload", "max_nodes", "max_predictions"} & report_keywords)

    def test_lists_tuples_and_dicts(self):
        # Where the CLI takes "a,b" or "k=v,k=v", the bindings take the Python value.
        m = path("models/qwen3-8b.yaml")
        base = dict(nodes=1, offload="none", optimizer="adamw")
        self.assertEqual(muonplan.plan(m, layout={"fsdp": 8, "cp": 1, "ep": 1}, **base),
                         muonplan.plan(m, layout="fsdp=8,cp=1,ep=1", **base))
        self.assertEqual(muonplan.plan(m, adamw_betas=(0.8, 0.99), **base),
                         muonplan.plan(m, adamw_betas="0.8,0.99", **base))
        self.assertEqual(muonplan.plan(m, nodes=1, ns_schedule=[(3.4445, -4.775, 2.0315)] * 5),
                         muonplan.plan(m, nodes=1, ns_schedule=";".join(["3.4445,-4.775,2.0315"] * 5)))
        self.assertEqual(muonplan.plan(m, lora_rank=8, lora_targets=["q_proj", "v_proj"], **base),
                         muonplan.plan(m, lora_rank=8, lora_targets="q_proj,v_proj", **base))

    def test_version(self):
        r = subprocess.run([BIN, "--version"], capture_output=True, text=True)
        self.assertEqual(r.stdout.strip(), "muonplan " + muonplan.__version__)
        self.assertRegex(muonplan.__version__, r"^\d+\.\d+\.\d+$")


class ErrorsMatchCli(unittest.TestCase):
    CASES = [  # (keyword options, the same as CLI flags)
        ({"nodes": 0}, ["--nodes", "0"]),
        ({"nodes": 1, "layout": "fsdp=3"}, ["--nodes", "1", "--layout", "fsdp=3"]),
        ({"offload": "disk"}, ["--offload", "disk"]),
        ({"owners": "x"}, ["--owners", "x"]),
        ({"offload": "full", "nesterov": True}, ["--offload", "full", "--nesterov"]),
        ({"tokens_per_step": 4096}, ["--tokens-per-step", "4096"]),
        ({"ns_schedule": "nope"}, ["--ns-schedule", "nope"]),
    ]

    def assert_same_error(self, call, cli_args):
        # The CLI's message, with each flag written as the keyword that stands for it.
        rc, _, err = cli(*cli_args)
        self.assertEqual(rc, 2, err)
        with self.assertRaises(ValueError) as ctx:
            call()
        self.assertEqual(str(ctx.exception), as_keywords(err))
        self.assertIsInstance(ctx.exception, muonplan.InputError)

    def test_plan_errors(self):
        model = path("models/qwen3-8b.yaml")
        for options, flags in self.CASES:
            with self.subTest(options=options):
                self.assert_same_error(lambda: muonplan.plan(model, **options),
                                       ["plan", "--model", model, *flags])

    def test_missing_model(self):
        self.assert_same_error(lambda: muonplan.plan("missing.yaml"),
                               ["plan", "--model", "missing.yaml"])

    def test_bad_inputs(self):
        model, topo = path("models/qwen3-8b.yaml"), path("topologies/h200-ib.yaml")
        for kind in ("model", "topology"):
            corpus = path(f"tests/data/bad/{kind}")
            for name in sorted(os.listdir(corpus))[:4]:
                bad = os.path.join(corpus, name)
                m, t = (bad, topo) if kind == "model" else (model, bad)
                with self.subTest(file=bad):
                    self.assert_same_error(lambda: muonplan.plan(m, t),
                                           ["plan", "--model", m, "--topology", t])

    def test_cost_error(self):
        self.assert_same_error(lambda: muonplan.cost_ns(-5, 8),
                               ["cost", "ns", "--rows", "-5", "--cols", "8"])

    def test_hyperparameters_refused_as_by_cli(self):
        # Accepted before (inf written as null, 0 and NaN replaced by the default), so the plan
        # was refused by the executor or silently ran something else (docs/reliability.md).
        model = path("models/qwen3-8b.yaml")
        with self.assertRaises(muonplan.InputError) as ctx:
            muonplan.plan(model, lr=float("inf"))
        self.assertEqual(str(ctx.exception), "lr: must be a finite number > 0, got inf")
        for options, flags in [({"lr": float("inf")}, ["--lr", "inf"]),
                               ({"momentum": 2}, ["--momentum", "2"]),
                               ({"update_rms": 0}, ["--update-rms", "0"]),
                               ({"gpus_per_node": 0}, ["--gpus-per-node", "0"]),
                               ({"gpu_memory_gib": float("nan")}, ["--gpu-memory-gib", "nan"])]:
            with self.subTest(options=options):
                self.assert_same_error(lambda: muonplan.plan(model, **options),
                                       ["plan", "--model", model, *flags])

    def test_unknown_option(self):
        with self.assertRaises(TypeError) as ctx:
            muonplan.plan(path("models/qwen3-8b.yaml"), frobnicate=1)
        self.assertEqual(str(ctx.exception),
                         "plan(): got an unexpected keyword argument 'frobnicate'")

    def test_bad_dict_names_the_dict(self):
        broken = dict(TINY_MOE, hidden_size=-1)
        with self.assertRaises(ValueError) as ctx:
            muonplan.inspect(broken)
        self.assertTrue(str(ctx.exception).startswith("<model dict>"), str(ctx.exception))


class ReportAndExample(unittest.TestCase):
    def test_report(self):
        with tempfile.TemporaryDirectory() as out:
            r = muonplan.report(TINY_MOE, out, path("topologies/cpu-ci.yaml"), nodes=[1, 2],
                                gpus_per_node=4)
            self.assertTrue(os.path.isfile(r["report_md"]))
            self.assertEqual(len(r["plots"]), 7, r["plots"])  # with pipeline_gantt.png
            chosen = muonplan.plan(TINY_MOE, path("topologies/cpu-ci.yaml"), max_nodes=2,
                                   gpus_per_node=4)
            self.assertEqual(r["data"]["chosen"]["decision"], chosen["decision"])
            with open(r["report_md"]) as f:
                self.assertIn(chosen["decision"]["reason"], f.read())
        # The report sweeps nodes and offload modes: its signature has no such keyword.
        for options in ({"offload": "none"}, {"max_predictions": 5}):
            with self.subTest(options=options), self.assertRaises(TypeError) as ctx:
                muonplan.report(TINY_MOE, "/tmp/unused", **options)
            self.assertIn("report(): got an unexpected keyword argument", str(ctx.exception))

    def test_search_budget(self):
        # The budget of predictions is the CLI's --max-predictions: a fit within it is the
        # same answer; a budget given must be positive.
        model = path("models/tiny-moe.yaml")
        got = muonplan.plan(model, path("topologies/cpu-ci.yaml"), max_predictions=1,
                            gpus_per_node=4)
        want = cli_json("plan", "--model", model, "--topology", path("topologies/cpu-ci.yaml"),
                        "--max-predictions", "1", "--gpus-per-node", "4")
        self.assertEqual(got, want)
        self.assertTrue(got["fits"])
        with self.assertRaises(muonplan.InputError) as e:
            muonplan.plan(TINY_MOE, max_predictions=0)
        self.assertEqual(str(e.exception), "max_predictions: expected a positive integer, got '0'")

    def test_report_node_range_is_bounded(self):
        # A billion node counts would fill memory before the first plan; they are refused at
        # once. In a child capped at 2 GB of address space, so that a regression fails fast.
        code = ("import muonplan, sys\n"
                "try:\n"
                "    muonplan.report(sys.argv[1], sys.argv[2], nodes='1..1000000000')\n"
                "except muonplan.InputError as e:\n"
                "    print(e)\n")
        cap = lambda: resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))  # noqa: E731
        with tempfile.TemporaryDirectory() as out:
            # A regression fills the 2 GB cap (MemoryError) or runs into the timeout.
            r = subprocess.run([sys.executable, "-c", code, path("models/tiny-moe.yaml"), out],
                               capture_output=True, text=True, timeout=60, preexec_fn=cap)
        self.assertEqual(r.stdout.strip(),
                         "nodes: '1..1000000000' goes beyond the topology's max_nodes (64)",
                         r.stderr)

    def test_pick_owners_example(self):
        r = run_example("pick_owners.py", "--model", "models/tiny-moe.yaml", "--topology",
                        "topologies/cpu-ci.yaml", "--nodes", "1", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        table = json.loads(r.stdout)
        plan = muonplan.plan(path("models/tiny-moe.yaml"), path("topologies/cpu-ci.yaml"),
                             nodes=1)
        batches = [c for c in plan["chunks"] if c["kind"] == "muon_batch"]
        self.assertEqual(len(table["batches"]), len(batches))
        for row, chunk in zip(table["batches"], batches):
            self.assertEqual(sorted(int(k) for k in row["owners"]), sorted(chunk["owners"]))
        # The text form says the same: each batch's owner lines name the JSON's matrices.
        text = run_example("pick_owners.py", "--model", "models/tiny-moe.yaml", "--topology",
                           "topologies/cpu-ci.yaml", "--nodes", "1", "--batches", "2")
        self.assertEqual(text.returncode, 0, text.stderr)
        printed = re.findall(r"^  (?:rank|position) (\d+): (.+)$", text.stdout, re.M)
        want = [(owner, str(row["owners"][owner])) for row in table["batches"][:2]
                for owner in sorted(row["owners"])]
        self.assertTrue(want)
        self.assertEqual(printed, want, text.stdout)


if __name__ == "__main__":
    unittest.main()
