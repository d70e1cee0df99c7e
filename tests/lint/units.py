#!/usr/bin/env python3
"""Fails naming every unit of the planner, the executor, planfile and the tools that has no test
of its name and no line in tests/units.txt, every line there whose unit or test does not
exist, and every line for a unit that has a test of its name (issue 47 item 7).

    units.py [SOURCE_DIR]      (default: the repository holding this script)
"""

import sys

LIBRARIES = ("planfile", "planner/src", "executor/src", "executor/cuda", "tools/src")


def own_tests(root):
    """The unit names that have a test of their name."""
    names = set()
    for p in (root / "tests").rglob("*"):
        if p.suffix in (".cc", ".py"):
            if p.stem.endswith("_test"):
                names.add(p.stem[: -len("_test")])
            elif p.stem.startswith("test_"):
                names.add(p.stem[len("test_"):])
    return names


def listed(root, problems):
    """Unit path -> its line number in tests/units.txt; problems for lines that name nothing."""
    units = {}
    for n, line in enumerate((root / "tests/units.txt").read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        unit, _, tests = line.partition(":")
        where = f"tests/units.txt:{n}"
        if unit in units:
            problems.append(f"{where}: {unit} listed twice")
        units[unit] = n
        if not (root / unit).is_file():
            problems.append(f"{where}: {unit}: no such unit")
        names = [t.strip() for t in tests.split(",") if t.strip()]
        if not names:
            problems.append(f"{where}: {unit}: names no test")
        for t in names:
            if not (root / t).is_file():
                problems.append(f"{where}: {t}: no such test")
    return units


def check(root):
    problems = []
    units = listed(root, problems)
    own = own_tests(root)
    for lib in LIBRARIES:
        for p in sorted((root / lib).rglob("*")):
            if p.suffix not in (".cc", ".cu"):
                continue
            rel = p.relative_to(root).as_posix()
            if p.stem in own and rel in units:
                problems.append(f"tests/units.txt:{units[rel]}: {rel} has a test of its name: "
                                f"drop the line")
            elif p.stem not in own and rel not in units:
                problems.append(f"{rel}: no test of its name (tests/*/{p.stem}_test.cc) and no "
                                f"line in tests/units.txt naming the tests that cover it")
    return problems


if __name__ == "__main__":
    from lint_main import run

    sys.exit(run("units", check))
