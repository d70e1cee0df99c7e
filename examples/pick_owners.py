#!/usr/bin/python3
"""Plan a model and print, for a training script, which rank orthogonalizes which matrix of
each Muon batch (from plan["chunks"]). Run from the repository root after building:

    PYTHONPATH=build/python /usr/bin/python3 examples/pick_owners.py --nodes 1
    PYTHONPATH=build/python /usr/bin/python3 examples/pick_owners.py --json > owners.json

Owners are positions in a batch's shard group. With HSDP (more ranks than the shard group),
every replica group does the same work: position p is rank p + g * group_size in group g.
"""
import argparse
import json
import sys

try:
    import muonplan
except ImportError:
    sys.exit("pick_owners.py: cannot import muonplan; set PYTHONPATH to the build's python/ dir")


def matrix_name(plan, matrix, partitions):
    """tensor[partition] for fused weights (qkv, gate_up), else the tensor's name."""
    parts = partitions[matrix["tensor"]]
    if len(parts) <= 1:
        return matrix["tensor"]
    return f"{matrix['tensor']}[{parts[matrix['partition']]['name']}]"


def owner_table(plan):
    """One entry per Muon batch: its shape and, per owning position, the matrix it owns."""
    partitions = {t["name"]: t["partitions"] for t in plan["tensors"]}
    batches = []
    for chunk in plan["chunks"]:
        if chunk["kind"] != "muon_batch":
            continue
        owners = {}
        for owner, matrix in zip(chunk["owners"], chunk["matrices"]):
            owners[owner] = matrix_name(plan, matrix, partitions)
        batches.append({"rows": chunk["rows"], "cols": chunk["cols"],
                        "group_size": chunk["shard_group"]["size"], "owners": owners})
    return batches


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="models/glm-4.5-air.yaml")
    ap.add_argument("--topology", default=None)
    ap.add_argument("--nodes", default="auto")
    ap.add_argument("--layout", default=None)
    ap.add_argument("--owners", default="balanced")
    ap.add_argument("--batches", type=int, default=0, help="print only the first N batches")
    ap.add_argument("--json", action="store_true", help="the table as JSON, for a script")
    args = ap.parse_args()
    try:
        plan = muonplan.plan(args.model, args.topology, nodes=args.nodes, layout=args.layout,
                             owners=args.owners)
    except ValueError as e:
        sys.exit(f"pick_owners.py: {e}")
    batches = owner_table(plan)
    if args.batches > 0:
        batches = batches[:args.batches]
    if args.json:
        json.dump({"model": plan["model"], "world_size": plan["world_size"],
                   "owners": plan["owners"], "batches": batches}, sys.stdout, indent=1)
        print()
        return
    local = sum(1 for c in plan["chunks"] if c["kind"] == "muon_local")
    layout = plan["layout"]
    print(f"# {plan['model']}: {plan['nodes']} node(s) x {plan['gpus_per_node']} GPUs, "
          f"layout fsdp={layout['fsdp']},cp={layout['cp']},ep={layout['ep']}, "
          f"owners {plan['owners']}")
    for i, b in enumerate(batches):
        print(f"batch {i}: {len(b['owners'])} x [{b['rows']}, {b['cols']}], "
              f"shard group of {b['group_size']}")
        who = "rank" if b["group_size"] == plan["world_size"] else "position"
        for owner in sorted(b["owners"]):
            print(f"  {who} {owner}: {b['owners'][owner]}")
    print(f"# plus {local} local chunk(s): expert stacks or replicated matrices, "
          "orthogonalized where they live")


if __name__ == "__main__":
    main()
