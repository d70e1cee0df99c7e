#!/usr/bin/env bash
# docs/topology.md's field tables against the topology reader (issue 47 item 5): every field the
# doc names is one the reader takes (set in a copy of h200-ib.yaml, it is not refused as an
# unknown field), and every field the reader checks for (its check_known lists in
# planner/src/topology/topology_yaml.cc) is named in the doc.
set -u
source "$(dirname "$0")/lib.sh"
if out="$("$py" - "$bin" "$work" <<'PY'
import copy, re, subprocess, sys, yaml
bin, work = sys.argv[1], sys.argv[2]
doc = open("docs/topology.md").read()
fmt = doc.split("## Format", 1)[1].split("\n## ", 1)[0]
documented = set()
section = ""
for line in fmt.splitlines():
    if line.startswith("The `pytorch:` section"):
        section = "pytorch."
    m = re.match(r"^\| `([a-z0-9_.]+)`", line)
    if m:
        documented.add(section + m.group(1))
cal = fmt.split("Calibration fields:", 1)[1].split("\n\n", 1)[0]
documented |= {"calibration." + k for k in re.findall(r"`([a-z0-9_]+)`", cal)}
documented.add("node.device")  # the example's comment documents it
base = yaml.safe_load(open("topologies/h200-ib.yaml"))
problems = []
sections = {"node.nvlink", "node.pcie", "node.nics", "node.host", "node.gpu", "fabric", "overheads"}
for key in sorted(documented - sections):
    t = copy.deepcopy(base)
    parts = key.split(".")
    d = t
    for p in parts[:-1]:
        d = d.setdefault(p, {})
        if not isinstance(d, dict):
            break
    else:
        d[parts[-1]] = 1
    path = f"{work}/t.yaml"
    yaml.safe_dump(t, open(path, "w"))
    r = subprocess.run([bin, "topology", "--topology", path], capture_output=True, text=True)
    if "unknown field" in r.stderr:
        problems.append(f"docs/topology.md names {key}, which the reader refuses: {r.stderr.strip()}")
src = open("planner/src/topology/topology_yaml.cc").read()
read = set()
for m in re.finditer(r"check_known\(\s*\{([^}]*)\}", src):
    read |= set(re.findall(r'"([a-z0-9_]+)"', m.group(1)))
leaves = {part for k in documented for part in k.split(".")}
for k in sorted(read - leaves):
    problems.append(f"the reader takes {k}, which docs/topology.md does not name")
if len(documented) < 40 or len(read) < 40:
    problems.append(f"too few fields found: doc {len(documented)}, reader {len(read)}")
print("\n".join(problems))
sys.exit(1 if problems else 0)
PY
)"; then ok; else bad "docs/topology.md and the reader disagree: $out"; fi
finish
