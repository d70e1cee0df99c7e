#!/usr/bin/env python3
"""Fails naming every header or include that breaks the layering (issue 37 item 5, issue 47 item 2).

Each library's public headers sit under its own prefix, so an include shows which layer a
file leans on: planfile/include/muonplan/planfile/ (and base/ under muonplan/base/),
planner/include/muonplan/planner/, tools/include/muonplan/tools/,
executor/include/muonplan/exec/. Two rules:

1. No public header sits anywhere else under an include/muonplan/ folder.
2. A layer includes only the layers below it (docs/architecture.md, "What depends on what"):
   base <- planfile <- planner <- tools; base <- planfile <- exec. The planner never sees the
   executor, nor the executor the planner.

Inside a library, its folders stack too (FOLDERS, drawn in docs/architecture.md, "Folders inside
a library"): a file includes only headers of its own folder or of a folder below it. A private
header's folder is where it sits; a public header's is its home, the folder holding the source
of its stem (layout.h: placement/layout.cc) or its HEADER_HOMES entry. Three
more rules:

3. Every public header of a layered library has exactly one home.
4. A folder in SEALED (a backend's own code) keeps its private headers: nothing outside it
   includes them, so the step reaches a backend only through the public headers.
5. Every source folder of a layered library is in its order.
6. docs/architecture.md draws FOLDERS as they are ("Folders inside a library").

    header_layers.py [SOURCE_DIR]      (default: the repository holding this script)
"""

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
# Library folder -> its source folders, lowest first. A file belongs to the longest folder it
# sits under (src/backends/cpu/ is part of src/backends/).
FOLDERS = {
    "planner": ("src/base", "src/spec", "src/topology", "src/ns", "src/placement", "src/cost",
                "src/plan", "src/prime_rl"),
    "executor": ("openblas_core", "src/backends", "src/comm", "src/checkpoint", "src/step", "src/run",
                 "bench_support", "cuda"),
    "tools": ("src/calibration", "src"),
}
# Public headers whose home is not the one folder holding a source of their stem: their home, by
# what they declare.
HEADER_HOMES = {
    "planner": {
        "model_io.h": "src/spec",  # model_yaml.cc, hf_import.cc
        "model_spec.h": "src/spec",
        "topology.h": "src/topology",
        "topology_nodes.h": "src/topology",
        # micro_steps (cost/workload_cost.cc), used by the cost model; load_workload is the
        # plan room's (plan/workload_in.cc), above it.
        "workload.h": "src/cost",
        "plan.h": "src/plan",
        "plan_flag_table.h": "src/plan",
        "prime_rl.h": "src/prime_rl",  # the prime-rl importer's front door
    },
    "executor": {
        "bf16.h": "src/backends",
        "field.h": "src/backends",
        "fnv1a.h": "src/backends",
        "kernels.h": "src/backends",
        "memory_counter.h": "src/backends",
        "optimizer_formulas.h": "src/backends",
        "communicator.h": "src/comm",
        "cuda_device.h": "cuda",  # device.cu
        # Two sources: the preloaded library's constructor (openblas_core/) and the CPU
        # backend's reading of what it chose; the header is the backend's.
        "openblas_core.h": "src/backends",
    },
    "tools": {},
}
# Where each layered library's public headers are (HOMES' prefix of it).
PUBLIC = {"planner": "planner", "executor": "exec", "tools": "tools"}
SEALED = ("executor/src/backends/cpu", "executor/cuda")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]muonplan/([^/">]+)(/[^">]*)?[">]')
QUOTED = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SUFFIXES = (".cc", ".h", ".cu", ".cuh")


def layer_of(rel):
    """The most specific LAYERS key that rel sits under, or None (a top-level consumer)."""
    best = None
    for folder in LAYERS:
        if rel == folder or rel.startswith(folder + "/"):
            if best is None or len(folder) > len(best):
                best = folder
    return best


def folder_of(lib, rel_in_lib):
    """The longest folder of FOLDERS[lib] holding rel_in_lib, or None."""
    best = None
    for folder in FOLDERS[lib]:
        if rel_in_lib.startswith(folder + "/") and (best is None or len(folder) > len(best)):
            best = folder
    return best


def sources(root, base):
    for path in sorted((root / base).rglob("*")):
        if path.suffix in SUFFIXES and path.is_file():
            yield path


def public_homes(root, lib, problems):
    """Public header name -> its home folder (rule 3)."""
    stems = {}
    for path in sources(root, lib):
        rel = path.relative_to(root / lib).as_posix()
        folder = folder_of(lib, rel)
        if folder is not None and path.suffix in (".cc", ".cu"):
            stems.setdefault(path.stem, set()).add(folder)
    homes = {}
    for header in sorted((root / HOMES[PUBLIC[lib]]).glob("*.h")):
        table = HEADER_HOMES[lib].get(header.name)
        found = {table} if table is not None else stems.get(header.stem, set())
        if len(found) != 1:
            problems.append(f"{header.relative_to(root)}: {len(found)} home folders "
                            f"({', '.join(sorted(found)) or 'none'}); a public header's home is "
                            f"the folder of the source of its stem or its HEADER_HOMES entry")
            continue
        homes[header.name] = found.pop()
    return homes


def check_folders(root, lib, problems):
    """Rules 3-5 and the folder order inside one library."""
    order = {folder: i for i, folder in enumerate(FOLDERS[lib])}
    homes = public_homes(root, lib, problems)
    prefix = f"muonplan/{PUBLIC[lib]}/"
    for path in sources(root, lib):
        rel = path.relative_to(root / lib).as_posix()
        if rel.startswith("include/"):
            continue
        me = folder_of(lib, rel)
        if me is None:
            problems.append(f"{lib}/{rel}: in no folder of {lib}'s order "
                            f"({', '.join(FOLDERS[lib])})")
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = QUOTED.match(line)
            if not m:
                continue
            name = m.group(1)
            if name.startswith(prefix):
                target = homes.get(name[len(prefix):])
                where = name
            elif name.startswith("muonplan/"):
                continue  # another library: rule 2
            else:
                # A private header: beside the file, or under the library's src/.
                found = [p for p in (path.parent / name, root / lib / "src" / name) if p.is_file()]
                if not found:
                    continue
                hit = found[0].resolve().relative_to(root.resolve()).as_posix()
                sealed = next((s for s in SEALED if hit.startswith(s + "/")), None)
                here = f"{lib}/{rel}"
                if sealed and not here.startswith(sealed + "/"):
                    problems.append(f"{here}:{n}: includes {hit}, private to {sealed}/ "
                                    f"(a backend's own code: reach it through a public header)")
                target = folder_of(lib, hit[len(lib) + 1:])
                where = hit
            if target is not None and order[target] > order[me]:
                problems.append(f"{lib}/{rel}:{n}: {me}/ includes {where} of {target}/, "
                                f"a folder above it ({' < '.join(FOLDERS[lib])})")


def check_drawing(root, problems):
    """Rule 6: the order drawn in docs/architecture.md is FOLDERS'."""
    doc = root / "docs" / "architecture.md"
    drawn, section = {}, False
    for line in doc.read_text().splitlines():
        if line.startswith("## "):
            section = line.startswith("## Folders inside a library")
        m = re.match(r"^    (\w+)\s+(\S.*)$", line) if section else None
        if m:
            drawn[m.group(1)] = tuple(m.group(2).split(" < "))
    for lib, order in FOLDERS.items():
        if drawn.get(lib) != order:
            problems.append(f"docs/architecture.md, \"Folders inside a library\": {lib} is drawn "
                            f"{' < '.join(drawn.get(lib, ('nothing',)))}, the lint has "
                            f"{' < '.join(order)}")
    for lib in sorted(set(drawn) - set(FOLDERS)):
        problems.append(f"docs/architecture.md draws {lib}, which the lint does not layer")


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
    for lib in FOLDERS:
        check_folders(root, lib, problems)
    check_drawing(root, problems)
    return problems


if __name__ == "__main__":
    from lint_main import run

    sys.exit(run("header_layers", check))
