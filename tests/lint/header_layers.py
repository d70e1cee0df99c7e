#!/usr/bin/env python3
"""Fails naming every header or include that breaks the layering (issue 37 item 5).

Each library's public headers sit under its own prefix, so an include shows which layer a
file leans on: planfile/include/muonplan/planfile/ (and base/ under muonplan/base/),
planner/include/muonplan/planner/, tools/include/muonplan/tools/,
executor/include/muonplan/exec/. Two rules:

1. No public header sits anywhere else under an include/muonplan/ folder.
2. A layer includes only the layers below it (docs/architecture.md, "What depends on what"):
   base <- planfile <- planner <- tools; base <- planfile <- exec. The planner never sees the
   executor, nor the executor the planner.

    header_layers.py [SOURCE_DIR]      (default: the repository holding this script)
"""

import pathlib
import re
import sys

# Folder of sources -> the include prefixes its code may use. Tests, cli, bench, python and
# fuzz sit on top and may use every layer.
LAYERS = {
    "planfile/base": ("base",),
    "planfile": ("base", "planfile"),
    "planner": ("base", "planfile", "planner"),
    "tools": ("base", "planfile", "planner", "tools"),
    "executor": ("base", "planfile", "exec"),
}
# Where each prefix's headers live: the only place a header of that prefix may be.
HOMES = {
    "base": "planfile/base/include/muonplan/base",
    "planfile": "planfile/include/muonplan/planfile",
    "planner": "planner/include/muonplan/planner",
    "tools": "tools/include/muonplan/tools",
    "exec": "executor/include/muonplan/exec",
}
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]muonplan/([^/">]+)(/[^">]*)?[">]')
SUFFIXES = (".cc", ".h", ".cu", ".cuh")


def layer_of(rel):
    """The most specific LAYERS key that rel sits under, or None (a top-level consumer)."""
    best = None
    for folder in LAYERS:
        if rel == folder or rel.startswith(folder + "/"):
            if best is None or len(folder) > len(best):
                best = folder
    return best


def check(root):
    problems = []
    homes = {root / h for h in HOMES.values()}
    for inc in root.glob("*/**/include/muonplan"):
        if "build" in inc.relative_to(root).parts[0]:
            continue
        for header in inc.rglob("*"):
            if header.suffix in SUFFIXES and header.parent not in homes:
                problems.append(f"{header.relative_to(root)}: a public header outside its "
                                f"layer's prefix ({', '.join(sorted(HOMES.values()))})")
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.suffix not in SUFFIXES or rel.startswith(("build", ".git")):
            continue
        layer = layer_of(rel)
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            prefix, rest = m.group(1), m.group(2)
            if rest is None:
                problems.append(f"{rel}:{n}: muonplan/{prefix} names no layer "
                                f"(muonplan/<{'|'.join(HOMES)}>/NAME.h)")
            elif prefix not in HOMES:
                problems.append(f"{rel}:{n}: muonplan/{prefix}/ is no layer ({', '.join(HOMES)})")
            elif layer is not None and prefix not in LAYERS[layer]:
                problems.append(f"{rel}:{n}: {layer}/ may include only "
                                f"{', '.join(LAYERS[layer])}, not muonplan/{prefix}/")
    return problems


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else __file__).resolve()
    if len(sys.argv) <= 1:
        root = root.parents[2]
    problems = check(root)
    for p in problems:
        print(p)
    print(f"header_layers: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
