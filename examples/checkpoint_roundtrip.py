#!/usr/bin/python3
"""Start `muonplan execute` from weights you have, and read its state back as whole tensors.
Run from the repository root after building:

    PYTHONPATH=build/python /usr/bin/python3 examples/checkpoint_roundtrip.py \\
        --muonplan build/cli/muonplan

1. Plans tiny-dense for 2 ranks and writes random weights (numpy arrays, as you would take them
   from a safetensors model file) as a step-0 checkpoint of that plan: muonplan.write_checkpoint
   cuts each whole tensor into the rows each rank holds; momentum and variance start at zero.
2. Reads it back with muonplan.read_checkpoint and checks every tensor is what was written.
3. With --muonplan: resumes it on a 1-rank plan (another world size: the executor gathers each
   shard from the files that hold its rows), runs one step, saves, and reads the result: every
   parameter moved, the step is 1.

Exit status 0 when every check holds. docs/checkpoint-format.md describes the files.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

try:
    import muonplan
except ImportError:
    sys.exit("checkpoint_roundtrip.py: cannot import muonplan; set PYTHONPATH to the build's "
             "python/ dir")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def plan_for(ranks):
    return muonplan.plan(os.path.join(ROOT, "models/tiny-dense.yaml"),
                         os.path.join(ROOT, "topologies/cpu-ci.yaml"), nodes=1,
                         gpus_per_node=ranks, offload="none")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--muonplan", help="the muonplan binary: also run one step from the weights")
    ap.add_argument("--out", help="directory for the checkpoints (default: a temporary one)")
    args = ap.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="muonplan_roundtrip_")
    os.makedirs(out, exist_ok=True)

    plan2 = plan_for(2)
    rng = np.random.default_rng(0)
    weights = {f"{t['name']}/param": (0.02 * rng.standard_normal(t["shape"])).astype(np.float32)
               for t in plan2["tensors"]}
    start = os.path.join(out, "start")
    muonplan.write_checkpoint(start, weights, step=0, plan=plan2)
    files = sorted(os.listdir(start))
    print(f"wrote {len(weights)} tensors for {plan2['world_size']} ranks: {' '.join(files)}")

    back = muonplan.read_checkpoint(start)
    assert back["step"] == 0, back["step"]
    for name, w in weights.items():
        assert np.array_equal(back["tensors"][name], w), name
        momentum = back["tensors"][name[:-len("/param")] + "/momentum"]
        assert momentum.shape == w.shape and not momentum.any(), name
    print(f"read back {len(back['tensors'])} whole tensors, params equal to the ones written")

    if not args.muonplan:
        return 0
    plan1 = os.path.join(out, "plan-1rank.json")
    with open(plan1, "w") as f:
        json.dump(plan_for(1), f)
    after = os.path.join(out, "after")
    env = dict(os.environ, OMPI_MCA_ess_singleton_isolated="1")
    run = subprocess.run([args.muonplan, "execute", "--plan", plan1, "--resume", start,
                          "--steps", "1", "--checkpoint", after, "--json"],
                         capture_output=True, text=True, env=env)
    if run.returncode != 0:
        sys.exit(f"execute failed ({run.returncode}): {run.stderr.strip()}")
    metrics = json.loads(run.stdout)
    assert metrics["first_step"] == 1 and metrics["last_step"] == 1, metrics
    state = muonplan.read_checkpoint(after)
    assert state["step"] == 1, state["step"]
    moved = 0
    for name, w in weights.items():
        delta = state["tensors"][name] - w
        assert np.all(np.isfinite(delta)), name
        moved += bool(np.any(delta != 0))
    assert moved == len(weights), f"only {moved} of {len(weights)} parameters moved"
    name = "model.layers.0.self_attn.qkv_proj.weight/param"
    rms = float(np.sqrt(np.mean((state["tensors"][name] - weights[name]) ** 2)))
    print(f"1 step on 1 rank from the 2-rank checkpoint: all {moved} parameters moved; "
          f"update RMS of {name}: {rms:.3g}; state_digest {metrics['measured']['state_digest']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
