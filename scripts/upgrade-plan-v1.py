#!/usr/bin/env python3
"""Upgrades muonplan.plan/1 files to muonplan.plan/2 in place: adds tensors[].shard, the rule
`muonplan plan` now states (row_sharded over fsdp, stack_sharded over ep x world/ep, replicated
when fsdp is 1). Usage: scripts/upgrade-plan-v1.py FILE... (files of another schema are left)."""
import json
import sys


def shard(t, layout, world):
    if t.get("stack_dim") == 0:
        return {"kind": "stack_sharded", "ep": layout["ep"], "dp": world // layout["ep"]}
    if layout["fsdp"] == 1:
        return {"kind": "replicated"}
    return {"kind": "row_sharded", "group_size": layout["fsdp"]}


for path in sys.argv[1:]:
    text = open(path).read()
    try:
        plan = json.loads(text)
    except ValueError:
        print(f"{path}: not JSON, left as it is")
        continue
    if not isinstance(plan, dict) or plan.get("schema") != "muonplan.plan/1":
        print(f"{path}: not muonplan.plan/1, left as it is")
        continue
    try:
        for t in plan["tensors"]:
            t["shard"] = shard(t, plan["layout"], plan["world_size"])
    except (KeyError, TypeError, ZeroDivisionError) as e:
        print(f"{path}: malformed ({e!r}), schema only")
    plan["schema"] = "muonplan.plan/2"
    with open(path, "w") as f:
        # As muonplan writes JSON (nlohmann: keys sorted), indented as the file was.
        if "\n" in text.strip():
            json.dump(plan, f, indent=1, sort_keys=True)
        else:
            json.dump(plan, f, sort_keys=True, separators=(",", ":"))
        if text.endswith("\n"):
            f.write("\n")
    print(f"{path}: upgraded")
