#!/usr/bin/env python3
"""Fails naming every row of docs/architecture.md's link table ("What depends on what") that
disagrees with the CMake files (issue 47 item 8).

Each target a CMakeLists.txt outside tests/ builds (add_library, add_executable,
pybind11_add_module) has a row whose first cell names it in backticks; a loop's targets are
named by their pattern (LOOP_TARGETS). For each row:

- the `muonplan_*` targets in backticks in its links cell are exactly those the target's
  target_link_libraries name (PUBLIC, PRIVATE and INTERFACE together, in any branch: an
  optional link, as muonplan_cuda's NCCL, is written with its condition);
- every other library the target links appears in the cell by name (`A::B` by `A`, so
  `Boost::graph` by "Boost"); CMake variables (${CMAKE_DL_LIBS}) are not checked.

    link_table.py [SOURCE_DIR]      (default: the repository holding this script)
"""

import re
import sys

# A foreach loop's target, by the file that loops: its row's name.
LOOP_TARGETS = {"bench/CMakeLists.txt": "*_bench", "fuzz/CMakeLists.txt": "*_fuzz"}
# Targets without a row: what every target links for its warning flags (link_libraries).
NO_ROW = {"muonplan_warnings"}
ADD = re.compile(r"\b(add_library|add_executable|pybind11_add_module)\(\s*(\S+)")
LINK = re.compile(r"\btarget_link_libraries\(\s*([^)]*)\)", re.S)
KEYWORDS = {"PUBLIC", "PRIVATE", "INTERFACE"}


def cmake_links(root):
    """Target -> (the file that builds it, the set of items it links)."""
    targets = {}
    for cm in sorted(root.rglob("CMakeLists.txt")):
        rel = cm.relative_to(root).as_posix()
        if rel.startswith(("build", "tests/", ".git")):
            continue
        text = re.sub(r"#[^\n]*", "", cm.read_text())
        for m in ADD.finditer(text):
            name = m.group(2)
            if name.startswith("${"):
                if rel not in LOOP_TARGETS:
                    raise SystemExit(f"{rel}: a target named by a variable ({name}); give its "
                                     f"row's name in LOOP_TARGETS")
                name = LOOP_TARGETS[rel]
            targets.setdefault(name, (rel, set()))
        for m in LINK.finditer(text):
            words = m.group(1).split()
            name = words[0]
            if name.startswith("${") and rel in LOOP_TARGETS:
                name = LOOP_TARGETS[rel]
            if name not in targets:
                continue
            targets[name][1].update(w for w in words[1:] if w not in KEYWORDS)
    return targets


def doc_rows(root):
    """Row name -> its links cell, from the table under "What depends on what"."""
    rows, section = {}, False
    for line in (root / "docs" / "architecture.md").read_text().splitlines():
        if line.startswith("## "):
            section = line.startswith("## What depends on what")
        if not section or not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        for name in re.findall(r"`([^`]+)`", cells[0]):
            rows[name] = cells[1]
    return rows


def check(root):
    problems = []
    targets = cmake_links(root)
    rows = doc_rows(root)
    for name, (rel, links) in sorted(targets.items()):
        if name in NO_ROW:
            continue
        if name not in rows:
            problems.append(f"{name} ({rel}): no row in docs/architecture.md's link table")
            continue
        cell = rows[name]
        ours = {w for w in links if w.startswith("muonplan")}
        drawn = set(re.findall(r"`(muonplan[a-z_]*)`", cell))
        for w in sorted(ours - drawn):
            problems.append(f"{name}: links `{w}` ({rel}), which its row does not name")
        for w in sorted(drawn - ours):
            problems.append(f"{name}: its row names `{w}`, which {rel} does not link")
        for w in sorted(links - ours):
            if w.startswith("${"):
                continue
            if w.split("::")[0] not in cell:
                problems.append(f"{name}: links {w} ({rel}), which its row does not name")
    for name in sorted(set(rows) - set(targets)):
        problems.append(f"docs/architecture.md's link table has a row for `{name}`, which no "
                        f"CMakeLists.txt builds")
    return problems


if __name__ == "__main__":
    from lint_main import run

    sys.exit(run("link_table", check))
